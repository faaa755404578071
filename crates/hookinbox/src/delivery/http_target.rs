//! The `http` target: POSTs the raw body to an internal URL, re-signed with
//! the Standard Webhooks scheme under the target's own secret, so the
//! internal app verifies one scheme whatever the provider.
//!
//! Headers sent: `Content-Type` as received, `Idempotency-Key` and
//! `webhook-id` = the inbox id (stable across retries and replays),
//! `webhook-timestamp`, `webhook-signature`, and `X-Hookinbox-Provider`,
//! `-Endpoint`, `-Event-Id`, `-Event-Type`; and `X-Hookinbox-Unsigned`
//! (`event-id, event-type`) naming the metadata that came from request values
//! the provider's signature does not cover, when there is any.
//!
//! A target with a `transform` sends the body the script made (signed over
//! those bytes), with the script's method (`POST` or `PUT`), URL (of the
//! target's own scheme) and added headers (`super::reshape`).
//!
//! `http://` URLs go over plain TCP; `https://` URLs over TLS with the
//! target's trust roots (see `tls.rs`), HTTP/1.1 either way.

use std::time::Duration;

use async_trait::async_trait;
use hookinbox_store::{LeasedDelivery, StoredEvent, UnsignedMetadata};
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Request, StatusCode, Uri};
use secrecy::{ExposeSecret, SecretSlice};

use super::destination::{AttemptResult, Destination};
use super::reshape::RequestOverrides;
use super::retry_policy::AttemptOutcome;
use crate::clock;
use crate::http_client::HttpClient;
use crate::tls::client::{self as tls, TrustRoots};

/// Never read more than this of a target's response body (it is drained, not kept).
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

pub struct HttpTarget {
    url: Uri,
    timeout: Duration,
    signing_key: SecretSlice<u8>,
    /// Plain for `http://` targets, TLS for `https://` ones.
    client: HttpClient,
}

impl std::fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTarget")
            .field("url", &self.url)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl HttpTarget {
    /// A target sending over plain TCP (`http://` URLs).
    pub fn new(url: Uri, timeout: Duration, signing_key: SecretSlice<u8>) -> HttpTarget {
        HttpTarget {
            url,
            timeout,
            signing_key,
            client: HttpClient::plain(timeout),
        }
    }

    /// A target sending over TLS (`https://` URLs), verifying the server
    /// against `roots` and the URL's host name.
    pub fn with_tls(
        url: Uri,
        timeout: Duration,
        signing_key: SecretSlice<u8>,
        roots: TrustRoots,
    ) -> Result<HttpTarget, rustls::Error> {
        Ok(HttpTarget {
            url,
            timeout,
            signing_key,
            client: HttpClient::tls(timeout, roots)?,
        })
    }

    /// One attempt, signed at `now_secs`, with a transform's `overrides`.
    /// Errors are described without URLs, bodies or secrets.
    pub async fn send(
        &self,
        event: &StoredEvent,
        overrides: &RequestOverrides,
        now_secs: i64,
    ) -> AttemptOutcome {
        let url = match &overrides.url {
            None => self.url.clone(),
            Some(url) => match self.transformed_url(url) {
                Some(url) => url,
                None => {
                    return AttemptOutcome::Permanent {
                        error: "transform: the handler's url is not an absolute URL of the \
                                target's scheme"
                            .into(),
                    }
                }
            },
        };
        let body = event.payload.clone().unwrap_or_default();
        let signature = hookinbox_verify::providers::standard::sign_v1(
            self.signing_key.expose_secret(),
            &event.id,
            now_secs,
            &body,
        );
        let mut request = Request::builder()
            .method(overrides.method.clone())
            .uri(url)
            .header(
                CONTENT_TYPE,
                event
                    .content_type
                    .as_deref()
                    .unwrap_or("application/octet-stream"),
            )
            .header("idempotency-key", &event.id)
            .header("webhook-id", &event.id)
            .header("webhook-timestamp", now_secs.to_string())
            .header("webhook-signature", signature)
            .header("x-hookinbox-provider", &event.provider)
            .header("x-hookinbox-endpoint", &event.endpoint_id);
        if let Ok(value) = HeaderValue::from_str(&event.provider_event_id) {
            request = request.header("x-hookinbox-event-id", value);
        }
        if let Some(value) = event
            .event_type
            .as_deref()
            .and_then(|t| HeaderValue::from_str(t).ok())
        {
            request = request.header("x-hookinbox-event-type", value);
        }
        if let Some(value) = unsigned_header(&event.unsigned_metadata) {
            request = request.header("x-hookinbox-unsigned", value);
        }
        for (name, value) in &overrides.headers {
            request = request.header(name, value);
        }
        // The attempt's span, so the service's own spans join the event's trace.
        for (name, value) in crate::traces::propagation_headers() {
            request = request.header(name, value);
        }
        let request = match request.body(Full::new(body)) {
            Ok(request) => request,
            Err(_) => {
                return AttemptOutcome::Permanent {
                    error: "the event's metadata cannot be sent as HTTP headers".into(),
                }
            }
        };
        let attempt = async {
            let response = self.client.request(request).await?;
            let status = response.status();
            let headers = response.headers().clone();
            // Drain a bounded amount so the connection can be reused; the content is not kept.
            let _ = http_body_util::Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await;
            Ok::<_, hyper_util::client::legacy::Error>((status, headers))
        };
        match tokio::time::timeout(self.timeout, attempt).await {
            Err(_) => AttemptOutcome::Transient {
                error: format!("timeout after {} ms", self.timeout.as_millis()),
                retry_after_ms: None,
            },
            Ok(Err(error)) => AttemptOutcome::Transient {
                error: match tls::describe_failure(&error) {
                    Some(tls_failure) => tls_failure.into(),
                    None if error.is_connect() => super::connect_failure::describe(&error).into(),
                    None => "connection error".into(),
                },
                retry_after_ms: None,
            },
            Ok(Ok((status, headers))) => {
                crate::traces::record_status(status.as_u16());
                classify(status, &headers, std::time::SystemTime::now())
            }
        }
    }
}

impl HttpTarget {
    /// A URL a transform chose, if it can be sent by this target's client:
    /// absolute, with a host, and of the configured URL's scheme (the
    /// client speaks TLS for `https://` targets only).
    fn transformed_url(&self, url: &str) -> Option<Uri> {
        let url: Uri = url.parse().ok()?;
        (url.host().is_some() && url.scheme_str() == self.url.scheme_str()).then_some(url)
    }
}

#[async_trait]
impl Destination for HttpTarget {
    async fn attempt(&self, lease: &LeasedDelivery, event: StoredEvent) -> AttemptResult {
        self.attempt_with(lease, event, &RequestOverrides::default())
            .await
    }

    async fn attempt_with(
        &self,
        _lease: &LeasedDelivery,
        event: StoredEvent,
        overrides: &RequestOverrides,
    ) -> AttemptResult {
        self.send(&event, overrides, clock::unix_seconds())
            .await
            .into()
    }
}

/// The `X-Hookinbox-Unsigned` value: the unsigned fields as header-style
/// names (`event-id, event-type`), or none when everything was signed.
pub(super) fn unsigned_header(unsigned: &UnsignedMetadata) -> Option<String> {
    let names: Vec<String> = unsigned
        .names()
        .map(|name| name.replace('_', "-"))
        .collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// Maps a target's answer to an attempt outcome. 2xx: delivered. 408, 409,
/// 425, 429 and 5xx: transient (with `Retry-After` on 429/503). Other 4xx
/// and 3xx: permanent.
pub fn classify(
    status: StatusCode,
    headers: &HeaderMap,
    now: std::time::SystemTime,
) -> AttemptOutcome {
    let error = format!("http {}", status.as_u16());
    if status.is_success() {
        return AttemptOutcome::Delivered;
    }
    let transient = status.is_server_error() || matches!(status.as_u16(), 408 | 409 | 425 | 429);
    if !transient {
        return AttemptOutcome::Permanent { error };
    }
    let retry_after_ms = if matches!(status.as_u16(), 429 | 503) {
        headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry_after_ms(v, now))
    } else {
        None
    };
    AttemptOutcome::Transient {
        error,
        retry_after_ms,
    }
}

/// `Retry-After` as delay-seconds or an HTTP-date.
fn retry_after_ms(value: &str, now: std::time::SystemTime) -> Option<i64> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some((seconds.min(86_400 * 7) * 1_000) as i64);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(now)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: u16, retry_after: Option<&str>) -> AttemptOutcome {
        let mut headers = HeaderMap::new();
        if let Some(value) = retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
        }
        classify(
            StatusCode::from_u16(status).unwrap(),
            &headers,
            std::time::UNIX_EPOCH,
        )
    }

    #[test]
    fn statuses_classify_as_documented() {
        assert_eq!(outcome(200, None), AttemptOutcome::Delivered);
        assert_eq!(outcome(204, None), AttemptOutcome::Delivered);
        for transient in [408, 409, 425, 429, 500, 502, 503, 504] {
            assert!(
                matches!(outcome(transient, None), AttemptOutcome::Transient { .. }),
                "{transient}"
            );
        }
        for permanent in [301, 400, 401, 403, 404, 410, 422] {
            assert!(
                matches!(outcome(permanent, None), AttemptOutcome::Permanent { .. }),
                "{permanent}"
            );
        }
    }

    #[test]
    fn unsigned_metadata_is_named_in_one_header() {
        let both = UnsignedMetadata {
            event_id: true,
            event_type: true,
        };
        assert_eq!(
            unsigned_header(&both).as_deref(),
            Some("event-id, event-type")
        );
        let id_only = UnsignedMetadata {
            event_id: true,
            event_type: false,
        };
        assert_eq!(unsigned_header(&id_only).as_deref(), Some("event-id"));
        assert_eq!(unsigned_header(&UnsignedMetadata::default()), None);
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        assert_eq!(
            outcome(429, Some("3")),
            AttemptOutcome::Transient {
                error: "http 429".into(),
                retry_after_ms: Some(3_000)
            }
        );
        assert_eq!(
            outcome(503, Some("Thu, 01 Jan 1970 00:00:10 GMT")),
            AttemptOutcome::Transient {
                error: "http 503".into(),
                retry_after_ms: Some(10_000)
            }
        );
        // Only 429 and 503 carry a meaningful Retry-After.
        assert_eq!(
            outcome(500, Some("3")),
            AttemptOutcome::Transient {
                error: "http 500".into(),
                retry_after_ms: None
            }
        );
    }
}
