//! Reading the body of an unverified request, with memory bounded before
//! authentication:
//! - a declared oversize is refused before a byte is read, an undeclared
//!   one as soon as the stream crosses the endpoint's limit;
//! - every piece hyper hands over is *copied* into one buffer and dropped at
//!   once. Keeping the pieces (as collecting frames does) keeps each piece's
//!   whole read buffer alive: 200 clients sending one byte per packet held
//!   over a gigabyte that way;
//! - that buffer grows with what has arrived, by doubling up to
//!   min(`Content-Length`, limit), each growth claimed from the global
//!   [`BodyBudget`] first (503 when spent);
//! - the body must keep pace ([`BodyPace`]): a trickle ends in 408.
//!
//! A request answered before its body was read to the end (413, 415, 404,
//! 429, 503, …) gets `Connection: close`, and the rest of its body is read
//! and discarded for a bounded time and size ([`RequestBody::linger`]), so
//! a client that writes the whole body before reading (most SDKs) reads the
//! answer instead of a connection reset.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap};
use bytes::Bytes;
use http_body_util::BodyExt;

use super::body_budget::{BodyBudget, Reservation};
use super::body_pace::BodyPace;
use super::rejection::Rejection;

/// The first allocation for a body whose length is not declared or is
/// larger: enough for most webhooks, small enough that a client declaring a
/// megabyte and sending a byte costs little.
const INITIAL_CAPACITY: usize = 16 * 1024;

/// A body read to its end, and the budget its buffer holds (given back when
/// the request is done with it).
pub struct ReceivedBody {
    pub bytes: Bytes,
    pub reservation: Reservation,
}

/// How an answered request's unread body is drained before the connection
/// closes (lingering close).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Linger {
    pub timeout: Duration,
    pub max_bytes: u64,
}

/// The body of one request, owned by the pipeline until it is read or
/// drained.
pub struct RequestBody {
    body: Option<Body>,
    /// The body was given up half-read (too slow, or cut short): the
    /// connection cannot carry another request.
    abandoned: bool,
    /// The client sent `Expect: 100-continue` and waits before sending the
    /// body: nothing of it is in flight to drain.
    awaits_continue: bool,
}

impl RequestBody {
    pub fn new(body: Body, headers: &HeaderMap) -> RequestBody {
        let awaits_continue = headers
            .get(header::EXPECT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
        RequestBody {
            body: Some(body),
            abandoned: false,
            awaits_continue,
        }
    }

    /// Reads the whole body: at most `max_bytes`, declared to be `declared`
    /// bytes long (if it was), at `pace`, its buffer paid from `budget`.
    pub async fn read(
        &mut self,
        declared: Option<u64>,
        max_bytes: usize,
        budget: &BodyBudget,
        pace: &BodyPace,
    ) -> Result<ReceivedBody, Rejection> {
        if declared.is_some_and(|length| length > max_bytes as u64) {
            return Err(Rejection::TooLarge);
        }
        let Some(body) = self.body.as_mut() else {
            return Err(Rejection::BodyIncomplete);
        };
        let most = declared.map_or(max_bytes, |length| length as usize);
        let mut reservation = budget.reservation();
        let mut capacity = most.min(INITIAL_CAPACITY);
        reservation
            .grow(capacity)
            .map_err(|_| Rejection::overloaded())?;
        let mut buffer: Vec<u8> = Vec::with_capacity(capacity);
        let started = tokio::time::Instant::now();
        loop {
            let deadline = started + pace.allowed(buffer.len() as u64);
            let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => {
                    // Not drained: a client this slow gets the 408 and the close.
                    self.abandon();
                    return Err(Rejection::Timeout);
                }
                Ok(None) => break,
                Ok(Some(Err(_))) => {
                    self.abandon();
                    return Err(Rejection::BodyIncomplete);
                }
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers carry nothing we use
            };
            let needed = buffer.len() + data.len();
            if needed > max_bytes {
                return Err(Rejection::TooLarge);
            }
            if needed > capacity {
                let grown = needed.max(capacity.saturating_mul(2)).min(max_bytes);
                reservation
                    .grow(grown - capacity)
                    .map_err(|_| Rejection::overloaded())?;
                buffer.reserve_exact(grown - buffer.len());
                capacity = grown;
            }
            buffer.extend_from_slice(&data);
            // `data` (and with it hyper's read buffer) is released here.
        }
        self.body = None;
        Ok(ReceivedBody {
            bytes: Bytes::from(buffer),
            reservation,
        })
    }

    fn abandon(&mut self) {
        self.body = None;
        self.abandoned = true;
    }

    /// Whether the answer must close the connection: some of the body may
    /// still be on its way ([`linger`](RequestBody::linger) drains it), or
    /// it was given up half-read.
    pub fn answer_closes_connection(&self) -> bool {
        self.body.is_some() || self.abandoned
    }

    /// Reads and discards what is left of the body in the background, for
    /// at most `linger.timeout` and `linger.max_bytes`, so the client is
    /// still reading when the answer arrives.
    pub fn linger(mut self, linger: Linger) {
        let Some(mut body) = self.body.take() else {
            return;
        };
        if self.awaits_continue {
            return;
        }
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + linger.timeout;
            let mut drained = 0u64;
            while drained < linger.max_bytes {
                match tokio::time::timeout_at(deadline, body.frame()).await {
                    Ok(Some(Ok(frame))) => {
                        drained += frame.data_ref().map_or(0, |data| data.len() as u64);
                    }
                    _ => break,
                }
            }
        });
    }
}

/// The declared `Content-Length`, if there is a readable one.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACE: BodyPace = BodyPace {
        grace: Duration::from_secs(2),
        min_bytes_per_second: 1024,
        max_duration: Duration::from_secs(30),
    };

    fn request_body(body: Body) -> RequestBody {
        RequestBody::new(body, &HeaderMap::new())
    }

    /// A body that arrives in these pieces, as a trickling client sends it.
    fn in_pieces(pieces: Vec<&'static [u8]>) -> Body {
        let pieces = pieces
            .into_iter()
            .map(|p| Ok::<_, std::io::Error>(Bytes::from_static(p)));
        Body::from_stream(futures::stream::iter(pieces))
    }

    #[tokio::test]
    async fn pieces_are_copied_into_one_buffer_of_the_body_size() {
        let budget = BodyBudget::new(1 << 20);
        let mut body = request_body(in_pieces(vec![b"{\"id\":", b"\"a\"", b"}"]));
        let received = body.read(Some(12), 1024, &budget, &PACE).await.unwrap();
        assert_eq!(received.bytes, &b"{\"id\":\"a\"}"[..]);
        assert_eq!(received.reservation.bytes(), 12, "sized by Content-Length");
        assert!(!body.answer_closes_connection());
    }

    #[tokio::test]
    async fn an_undeclared_body_grows_its_buffer_by_doubling_and_pays_for_it() {
        let budget = BodyBudget::new(1 << 20);
        let piece: &'static [u8] = &[b'x'; 10_000];
        let mut body = request_body(in_pieces(vec![piece; 5]));
        let received = body.read(None, 100_000, &budget, &PACE).await.unwrap();
        assert_eq!(received.bytes.len(), 50_000);
        // 16 KiB, then doubled to 32 KiB, then to 64 KiB.
        assert_eq!(received.reservation.bytes(), 64 * 1024);
        assert_eq!(budget.available(), (1 << 20) - 64 * 1024);
        drop(received);
        assert_eq!(budget.available(), 1 << 20);
    }

    #[tokio::test]
    async fn declared_and_streamed_oversize_are_refused() {
        let budget = BodyBudget::new(1 << 20);
        let mut declared = request_body(Body::from("0123456789"));
        assert_eq!(
            declared.read(Some(10), 9, &budget, &PACE).await.err(),
            Some(Rejection::TooLarge)
        );
        assert!(
            declared.answer_closes_connection(),
            "not read: drained after the answer"
        );
        let mut streamed = request_body(in_pieces(vec![b"01234", b"56789"]));
        assert_eq!(
            streamed.read(None, 9, &budget, &PACE).await.err(),
            Some(Rejection::TooLarge)
        );
        assert_eq!(budget.available(), 1 << 20, "nothing kept");
    }

    #[tokio::test]
    async fn a_spent_budget_answers_503_before_reading() {
        let budget = BodyBudget::new(100);
        let mut held = budget.reservation();
        held.grow(95).unwrap();
        let mut body = request_body(Body::from("0123456789"));
        assert_eq!(
            body.read(Some(10), 1024, &budget, &PACE).await.err(),
            Some(Rejection::overloaded())
        );
        assert!(body.answer_closes_connection());
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stalls_ends_in_408() {
        let budget = BodyBudget::new(1 << 20);
        // Ten bytes arrive, then nothing: the body is declared longer.
        let (mut sender, pieces) =
            futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        sender
            .try_send(Ok(Bytes::from_static(b"0123456789")))
            .unwrap();
        let mut body = request_body(Body::from_stream(pieces));
        let started = tokio::time::Instant::now();
        let result = body.read(Some(1000), 1024, &budget, &PACE).await;
        assert_eq!(result.err(), Some(Rejection::Timeout));
        // The grace period plus what ten bytes earn at 1 KiB/s, on the
        // test's paused clock (whose timers have millisecond resolution).
        let waited = started.elapsed();
        let allowed = PACE.allowed(10);
        assert!(
            waited >= allowed && waited <= allowed + Duration::from_millis(1),
            "{waited:?}"
        );
        assert!(body.answer_closes_connection(), "the 408 closes");
        assert!(body.body.is_none(), "a stalled body is not drained");
        drop(sender);
    }
}
