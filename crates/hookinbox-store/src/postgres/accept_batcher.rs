//! Ingress batching: concurrent `accept` calls of this process go through a
//! channel to one task, which gathers what is waiting into a batch and
//! commits it on a pooled connection (`accept::accept_in_one_statement`, or
//! `accept::accept_batch` in a transaction when the batch needs more than
//! one statement) — one round trip and one WAL flush for many requests.
//!
//! When a gathered batch goes ([`dispatch`], the whole rule):
//!
//! - at most `accept_concurrency` batches are in flight (default 2); with
//!   every slot taken, the next batch waits for one, growing meanwhile;
//! - with no commit in flight, it goes at once: an idle store adds no wait;
//! - a big batch (at least [`SMALL_BATCH_EVENTS`] events, or full:
//!   `max_batch_events` / `max_batch_bytes`) goes at once too;
//! - a small batch while a commit is in flight waits for that commit to
//!   finish, gathering what arrives meanwhile — but never more than
//!   [`MAX_GATHER_WAIT`] after its first request was gathered.
//!
//! Why: every commit costs PostgreSQL a WAL flush and backend CPU, shared
//! with everything else on the machine. Many tiny concurrent commits at a
//! moderate rate cost more CPU than one commit of them all, and a request
//! that arrives while a commit is in flight would wait for the disk anyway;
//! so under load the batch size follows the load, and at rest a request is
//! committed as soon as it arrives.
//!
//! Every caller is answered only after the COMMIT of its batch returned;
//! if anything fails — the COMMIT included, whose outcome is then unknown —
//! every caller of the batch gets `Unavailable` (a retryable 503,
//! deduplicated when the provider sends it again). A NOTIFY on the
//! delivery channel goes out with the batch's commit when it inserted
//! deliveries (part of the batch's statement, see `accept.rs`).
//!
//! A caller that stopped waiting (its deadline passed) before its batch was
//! sent is left out, as in the SQLite writer.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::accept::{accept_batch, accept_in_one_statement};
use super::db_error::PgError;
use crate::prepared_event::PreparedEvent;
use crate::{AcceptOutcome, StoreError};

/// A batch with fewer events than this waits for the commit in flight.
pub(crate) const SMALL_BATCH_EVENTS: usize = 16;

/// The longest a small batch waits for the commit in flight.
pub(crate) const MAX_GATHER_WAIT: Duration = Duration::from_millis(5);

/// One `accept` waiting for its batch.
pub(crate) struct AcceptRequest {
    pub(crate) event: PreparedEvent,
    pub(crate) reply: oneshot::Sender<Result<AcceptOutcome, StoreError>>,
}

/// What the batcher needs to know.
pub(crate) struct Batcher {
    pub(crate) pool: Pool,
    pub(crate) schema: String,
    pub(crate) notify_channel: String,
    pub(crate) max_events: usize,
    pub(crate) max_bytes: usize,
    pub(crate) concurrency: usize,
}

/// The batch being gathered, as [`dispatch`] sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gathered {
    pub(crate) events: usize,
    /// More requests may still join it: it is not full and the queue is
    /// open.
    pub(crate) can_grow: bool,
    /// Since its first request was gathered.
    pub(crate) waited: Duration,
}

/// What to do with the batch being gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dispatch {
    /// Commit it now.
    Now,
    /// Every slot is taken: wait for a commit to finish.
    WaitForSlot,
    /// Small, with a commit in flight: wait for it to finish, for more
    /// requests, or at most this long.
    WaitToGrow(Duration),
}

/// The batching rule of the module doc.
pub(crate) fn dispatch(batch: Gathered, in_flight: usize, max_in_flight: usize) -> Dispatch {
    if in_flight >= max_in_flight.max(1) {
        return Dispatch::WaitForSlot;
    }
    if in_flight == 0 || !batch.can_grow || batch.events >= SMALL_BATCH_EVENTS {
        return Dispatch::Now;
    }
    match MAX_GATHER_WAIT.checked_sub(batch.waited) {
        Some(left) if !left.is_zero() => Dispatch::WaitToGrow(left),
        _ => Dispatch::Now,
    }
}

/// The requests gathered for the next batch.
struct Gathering {
    requests: Vec<AcceptRequest>,
    bytes: usize,
    since: Instant,
}

impl Gathering {
    fn push(&mut self, request: AcceptRequest) {
        if self.requests.is_empty() {
            self.since = Instant::now();
        }
        self.bytes += request.event.event.payload.len();
        self.requests.push(request);
    }
}

impl Batcher {
    /// Runs until every sender is dropped; batches in flight then finish.
    pub(crate) async fn run(self, mut queue: mpsc::Receiver<AcceptRequest>) {
        let this = Arc::new(self);
        let mut in_flight: JoinSet<()> = JoinSet::new();
        let mut gathering = Gathering {
            requests: Vec::new(),
            bytes: 0,
            since: Instant::now(),
        };
        let mut open = true;
        loop {
            // Take what is already queued, without waiting.
            while open && !this.is_full(&gathering) {
                match queue.try_recv() {
                    Ok(request) => gathering.push(request),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => open = false,
                }
            }
            if gathering.requests.is_empty() {
                if !open {
                    break;
                }
                tokio::select! {
                    request = queue.recv() => match request {
                        Some(request) => gathering.push(request),
                        None => open = false,
                    },
                    Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
                }
                continue;
            }
            let can_grow = open && !this.is_full(&gathering);
            let batch = Gathered {
                events: gathering.requests.len(),
                can_grow,
                waited: gathering.since.elapsed(),
            };
            let wait = match dispatch(batch, in_flight.len(), this.concurrency) {
                Dispatch::Now => {
                    let mut requests = std::mem::take(&mut gathering.requests);
                    gathering.bytes = 0;
                    skip_abandoned(&mut requests);
                    if !requests.is_empty() {
                        let this = Arc::clone(&this);
                        in_flight.spawn(async move { this.commit(requests).await });
                    }
                    continue;
                }
                Dispatch::WaitForSlot => None,
                Dispatch::WaitToGrow(left) => Some(left),
            };
            // Wait for a commit to finish, a request to join, or the end
            // of the wait; then decide again.
            let deadline = Instant::now() + wait.unwrap_or(Duration::ZERO);
            tokio::select! {
                Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
                request = queue.recv(), if can_grow => match request {
                    Some(request) => gathering.push(request),
                    None => open = false,
                },
                () = tokio::time::sleep_until(deadline), if wait.is_some() => {}
            }
        }
        while in_flight.join_next().await.is_some() {}
    }

    fn is_full(&self, gathering: &Gathering) -> bool {
        gathering.requests.len() >= self.max_events || gathering.bytes >= self.max_bytes
    }

    async fn commit(&self, batch: Vec<AcceptRequest>) {
        let started = std::time::Instant::now();
        let events: Vec<&PreparedEvent> = batch.iter().map(|request| &request.event).collect();
        let committed = self.commit_events(&events).await;
        metrics::histogram!("hookinbox_commit_duration_seconds")
            .record(started.elapsed().as_secs_f64());
        metrics::histogram!("hookinbox_commit_batch_ops").record(batch.len() as f64);
        match committed {
            Ok(outcomes) => {
                for (request, outcome) in batch.into_iter().zip(outcomes) {
                    // A caller that went away is fine: what was committed
                    // stays committed and a retry finds it.
                    let _ = request.reply.send(Ok(outcome));
                }
            }
            Err(error) => {
                tracing::error!(
                    message = "PostgreSQL batch commit failed; batch not acknowledged.",
                    %error,
                    ops = batch.len()
                );
                let error = Arc::new(error);
                for request in batch {
                    let _ = request
                        .reply
                        .send(Err(StoreError::unavailable(Arc::clone(&error))));
                }
            }
        }
    }

    async fn commit_events(
        &self,
        events: &[&PreparedEvent],
    ) -> Result<Vec<AcceptOutcome>, PgError> {
        let mut client = self.pool.get().await?;
        // One statement that commits by itself, when the batch fits one.
        if let Some(outcomes) =
            accept_in_one_statement(&client, &self.notify_channel, events).await?
        {
            return Ok(outcomes);
        }
        let tx = client.transaction().await?;
        let outcomes = accept_batch(&tx, &self.schema, &self.notify_channel, events).await?;
        // Only an answered COMMIT is a commit: an error here (the
        // connection lost on the way) leaves the outcome unknown, and it is
        // reported as the failure it may be.
        tx.commit().await?;
        Ok(outcomes)
    }
}

/// Drops the requests whose callers stopped waiting.
fn skip_abandoned(batch: &mut Vec<AcceptRequest>) {
    let before = batch.len();
    batch.retain(|request| !request.reply.is_closed());
    let skipped = before - batch.len();
    if skipped > 0 {
        metrics::counter!("hookinbox_commit_abandoned_ops_total").increment(skipped as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gathered(events: usize, can_grow: bool, waited_ms: u64) -> Gathered {
        Gathered {
            events,
            can_grow,
            waited: Duration::from_millis(waited_ms),
        }
    }

    #[test]
    fn with_nothing_in_flight_a_batch_goes_at_once() {
        assert_eq!(dispatch(gathered(1, true, 0), 0, 2), Dispatch::Now);
    }

    #[test]
    fn a_small_batch_waits_for_the_commit_in_flight_at_most_five_ms() {
        assert_eq!(
            dispatch(gathered(1, true, 0), 1, 2),
            Dispatch::WaitToGrow(MAX_GATHER_WAIT)
        );
        assert_eq!(
            dispatch(gathered(SMALL_BATCH_EVENTS - 1, true, 2), 1, 2),
            Dispatch::WaitToGrow(Duration::from_millis(3))
        );
        assert_eq!(dispatch(gathered(3, true, 5), 1, 2), Dispatch::Now);
        assert_eq!(dispatch(gathered(3, true, 9), 1, 2), Dispatch::Now);
    }

    #[test]
    fn a_big_or_full_batch_takes_a_free_slot_at_once() {
        assert_eq!(
            dispatch(gathered(SMALL_BATCH_EVENTS, true, 0), 1, 2),
            Dispatch::Now
        );
        // Full (by events or bytes), or the queue closed: nothing more
        // can join, so waiting gains nothing.
        assert_eq!(dispatch(gathered(2, false, 0), 1, 2), Dispatch::Now);
    }

    #[test]
    fn with_every_slot_taken_a_batch_waits_for_one() {
        for events in [1, SMALL_BATCH_EVENTS, 512] {
            for waited in [0, 5, 50] {
                assert_eq!(
                    dispatch(gathered(events, true, waited), 2, 2),
                    Dispatch::WaitForSlot
                );
                assert_eq!(
                    dispatch(gathered(events, false, waited), 2, 2),
                    Dispatch::WaitForSlot
                );
            }
        }
        // A concurrency of 0 means one at a time, not none.
        assert_eq!(dispatch(gathered(1, true, 0), 0, 0), Dispatch::Now);
        assert_eq!(dispatch(gathered(1, true, 0), 1, 0), Dispatch::WaitForSlot);
    }
}
