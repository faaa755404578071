//! Sends one streamed event to the local app: POST of the body as
//! received, either re-signed with Standard Webhooks under the local secret
//! with the same headers an `http` target sends (`delivery/http_target.rs`),
//! or with the provider's own headers as kept for audit (`--original-headers`;
//! their signed timestamps age, so an app checking them refuses old events).
//! `Idempotency-Key` is the inbox id either way.

use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::CONTENT_TYPE;
use hyper::{Request, Uri};
use secrecy::{ExposeSecret, SecretSlice};

use crate::admin::api::StreamedWebhook;
use crate::http_client::HttpClient;

/// How long the local app may take to answer one event.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// Never read more of the local app's answer than this (it is not kept).
const MAX_RESPONSE_BYTES: usize = 64 * 1024;
/// Headers of the provider's request never passed on: the connection's own.
const HOP_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "transfer-encoding",
    "keep-alive",
    "te",
    "upgrade",
    "expect",
];

/// How forwarded events are signed.
pub enum Signing {
    /// Standard Webhooks under this key (the `whsec_` secret's bytes).
    StandardWebhooks(SecretSlice<u8>),
    /// The provider's own headers, as kept with the event.
    OriginalHeaders,
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// 2xx: the app has the event; the cursor moves past it.
    Acknowledged(u16),
    /// An answer that sending again would not change (a 4xx other than
    /// 408 and 429, a 3xx): shown, and the cursor moves past it.
    Refused(u16),
    /// The event cannot be sent as an HTTP request (a header value HTTP
    /// does not allow): shown, and the cursor moves past it.
    Unsendable(String),
    /// 5xx, 408, 429, no connection, no answer in time: sent again.
    Failed { status: Option<u16>, error: String },
}

impl Answer {
    /// The answer a status is.
    pub fn of_status(status: u16) -> Answer {
        match status {
            200..=299 => Answer::Acknowledged(status),
            408 | 429 | 500..=599 => Answer::Failed {
                status: Some(status),
                error: format!("HTTP {status}"),
            },
            _ => Answer::Refused(status),
        }
    }
}

pub struct Forwarder {
    url: Uri,
    client: HttpClient,
    signing: Signing,
}

impl Forwarder {
    pub fn new(url: Uri, client: HttpClient, signing: Signing) -> Forwarder {
        Forwarder {
            url,
            client,
            signing,
        }
    }

    /// One attempt at `now_secs`, and how long it took.
    pub async fn send(&self, webhook: &StreamedWebhook, now_secs: i64) -> (Answer, Duration) {
        let started = Instant::now();
        let answer = match self.request(webhook, now_secs) {
            Ok(request) => self.attempt(request).await,
            Err(error) => Answer::Unsendable(error),
        };
        (answer, started.elapsed())
    }

    fn request(
        &self,
        webhook: &StreamedWebhook,
        now_secs: i64,
    ) -> Result<Request<Full<Bytes>>, String> {
        let body: Bytes = match &webhook.body_base64 {
            Some(text) => base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|_| "the stream sent a body that is not base64".to_owned())?
                .into(),
            None => Bytes::new(),
        };
        let content_type = webhook
            .content_type
            .as_deref()
            .unwrap_or("application/octet-stream");
        let mut request =
            Request::post(self.url.clone()).header("idempotency-key", &webhook.inbox_id);
        match &self.signing {
            Signing::StandardWebhooks(key) => {
                let signature = hookinbox_verify::providers::standard::sign_v1(
                    key.expose_secret(),
                    &webhook.inbox_id,
                    now_secs,
                    &body,
                );
                request = request
                    .header(CONTENT_TYPE, content_type)
                    .header("webhook-id", &webhook.inbox_id)
                    .header("webhook-timestamp", now_secs.to_string())
                    .header("webhook-signature", signature)
                    .header("x-hookinbox-provider", &webhook.provider)
                    .header("x-hookinbox-endpoint", &webhook.endpoint_id)
                    .header("x-hookinbox-event-id", &webhook.provider_event_id);
                if let Some(event_type) = &webhook.event_type {
                    request = request.header("x-hookinbox-event-type", event_type);
                }
            }
            Signing::OriginalHeaders => {
                let mut typed = false;
                for header in &webhook.headers {
                    let name = header.name.to_ascii_lowercase();
                    if HOP_HEADERS.contains(&name.as_str()) || name == "idempotency-key" {
                        continue;
                    }
                    typed |= name == "content-type";
                    request = request.header(name, &header.value);
                }
                if !typed {
                    request = request.header(CONTENT_TYPE, content_type);
                }
            }
        }
        request
            .body(Full::new(body))
            .map_err(|_| "the event's headers cannot be sent as HTTP headers".to_owned())
    }

    async fn attempt(&self, request: Request<Full<Bytes>>) -> Answer {
        let exchange = async {
            let response = self.client.request(request).await?;
            let status = response.status().as_u16();
            // Drained so the connection is reused; the content is not kept.
            let _ = http_body_util::Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await;
            Ok::<_, hyper_util::client::legacy::Error>(status)
        };
        match tokio::time::timeout(ATTEMPT_TIMEOUT, exchange).await {
            Err(_) => Answer::Failed {
                status: None,
                error: format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs()),
            },
            Ok(Err(error)) => Answer::Failed {
                status: None,
                error: connect_error(&error),
            },
            Ok(Ok(status)) => Answer::of_status(status),
        }
    }
}

/// The client error as a person reads it: "connection refused" rather than
/// the chain of wrappers.
fn connect_error(error: &hyper_util::client::legacy::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut last = error.to_string();
    while let Some(current) = source {
        last = current.to_string();
        source = current.source();
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_answers_that_may_change_are_sent_again() {
        assert_eq!(Answer::of_status(200), Answer::Acknowledged(200));
        assert_eq!(Answer::of_status(204), Answer::Acknowledged(204));
        assert_eq!(Answer::of_status(400), Answer::Refused(400));
        assert_eq!(Answer::of_status(401), Answer::Refused(401));
        assert_eq!(Answer::of_status(301), Answer::Refused(301));
        for status in [408, 429, 500, 502, 503] {
            assert!(
                matches!(Answer::of_status(status), Answer::Failed { .. }),
                "{status}"
            );
        }
    }
}
