//! Sends one freshly signed request over the shared keep-alive pool and classifies
//! what came back.
//!
//! Signing happens here, at send time, so `X-Timestamp` is the current second
//! even in long runs (the `lab` tolerance is 300 s). The whole response body is
//! read before the request counts as done: the server's 200 is written only
//! after its commit, and "acknowledged" means the client has all of it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::signing::Signer;

/// What one request ended as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// 2xx; `duplicate` if the server said it had the event already (an id
    /// collision in the generator, which should never happen).
    Ok { duplicate: bool },
    /// Any other status.
    Status(u16),
    /// No complete response: the kind names why.
    Error(&'static str),
}

pub struct Sender {
    client: Client<HttpConnector, Full<Bytes>>,
    uri: Uri,
    signer: Signer,
    timeout: Duration,
}

impl Sender {
    pub fn new(uri: Uri, signer: Signer, timeout: Duration) -> Self {
        let mut connector = HttpConnector::new();
        // Small responses must not wait for Nagle + delayed ACK.
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .build(connector);
        Self {
            client,
            uri,
            signer,
            timeout,
        }
    }

    /// Signs `body` (event `event_id`) with the current time and sends it;
    /// returns once the whole response is read, the request failed, or the
    /// timeout passed.
    pub async fn send(&self, event_id: &str, body: Bytes) -> Outcome {
        let timestamp = unix_seconds();
        let mut request = Request::post(self.uri.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in self.signer.headers(event_id, timestamp, &body) {
            request = request.header(name, value);
        }
        let request = request.body(Full::new(body));
        let request = match request {
            Ok(request) => request,
            Err(_) => return Outcome::Error("build_request"),
        };
        match tokio::time::timeout(self.timeout, self.exchange(request)).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::Error("timeout"),
        }
    }

    async fn exchange(&self, request: Request<Full<Bytes>>) -> Outcome {
        let response = match self.client.request(request).await {
            Ok(response) => response,
            Err(error) if error.is_connect() => return Outcome::Error("connect"),
            Err(_) => return Outcome::Error("request"),
        };
        let status = response.status();
        let body = match response.into_body().collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => return Outcome::Error("response_body"),
        };
        if status.is_success() {
            Outcome::Ok {
                duplicate: contains(&body, br#""duplicate":true"#),
            }
        } else {
            Outcome::Status(status.as_u16())
        }
    }
}

fn unix_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::contains;

    #[test]
    fn duplicate_marker_is_found_only_when_true() {
        assert!(contains(
            br#"{"accepted":true,"duplicate":true,"id":"x"}"#,
            br#""duplicate":true"#
        ));
        assert!(!contains(
            br#"{"accepted":true,"duplicate":false,"id":"x"}"#,
            br#""duplicate":true"#
        ));
    }
}
