//! The Stripe source: the account's events, from `GET /v1/events`.
//!
//! Stripe lists events newest first, `limit` per page; the next page is
//! asked for with `starting_after` = the last id of the previous one, while
//! the answer says `has_more`. `created[gte]` bounds the list to the
//! lookback. The key goes in `Authorization: Bearer`, never in a URL, a
//! log line or an error. Each listed event's JSON is kept byte for byte as
//! the API returned it (`RawValue`): that is the body stored for it.
//!
//! Errors say what failed without the API's answer body (which could echo
//! the request) and without the key.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION};
use hyper::{Request, Uri};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::config::{ConfigError, EndpointReconcile};
use crate::http_client::HttpClient;
use crate::tls::client::{self as tls, TrustRoots};

/// Most pages one pass reads: 1,000 pages of 100 is more than 30 days of
/// all but the busiest accounts; past it the pass stops rather than loop
/// on an API that keeps saying `has_more`.
const MAX_PAGES: usize = 1_000;
/// Most bytes of one page's answer.
const MAX_PAGE_BYTES: usize = 32 << 20;

/// One endpoint's view of a Stripe account's events.
pub struct StripeSource {
    endpoint_id: String,
    api_key: SecretString,
    base_url: Uri,
    lookback: Duration,
    page_size: u32,
    timeout: Duration,
    client: HttpClient,
}

/// Why listing failed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("endpoint {endpoint}: the Stripe events API answered HTTP {status}")]
    Status { endpoint: String, status: u16 },
    #[error("endpoint {endpoint}: the Stripe events API did not answer within {timeout:?}")]
    Timeout { endpoint: String, timeout: Duration },
    #[error("endpoint {endpoint}: cannot reach the Stripe events API ({reason})")]
    Unreachable {
        endpoint: String,
        reason: &'static str,
    },
    #[error(
        "endpoint {endpoint}: the Stripe events API answered something that is not an event list"
    )]
    NotAList { endpoint: String },
    #[error("endpoint {endpoint}: the Stripe events API had more than {MAX_PAGES} pages")]
    TooManyPages { endpoint: String },
}

/// One page of `GET /v1/events`.
#[derive(Deserialize)]
struct EventList {
    data: Vec<Box<RawValue>>,
    has_more: bool,
}

/// The id of a listed event, to page on.
#[derive(Deserialize)]
struct EventId {
    id: String,
}

impl StripeSource {
    /// Reads the API key and sets up the client; `field` names the table in
    /// errors (`endpoint[0].reconcile`).
    pub fn build(
        endpoint_id: &str,
        settings: &EndpointReconcile,
        field: &str,
    ) -> Result<StripeSource, ConfigError> {
        let api_key = settings.api_key.read(&format!("{field}.api_key"))?;
        let client = match settings.base_url.scheme_str() {
            Some("https") => {
                HttpClient::tls(settings.timeout, TrustRoots::Mozilla).map_err(|e| {
                    ConfigError::invalid(
                        format!("{field}.base_url"),
                        format!("cannot set up TLS: {e}"),
                    )
                })?
            }
            _ => HttpClient::plain(settings.timeout),
        };
        Ok(StripeSource {
            endpoint_id: endpoint_id.to_owned(),
            api_key,
            base_url: settings.base_url.clone(),
            lookback: settings.lookback,
            page_size: settings.page_size.get(),
            timeout: settings.timeout,
            client,
        })
    }

    pub fn endpoint_id(&self) -> &str {
        &self.endpoint_id
    }

    /// Every event created in the lookback up to `now_secs`, newest first,
    /// each as the API's JSON bytes; `on_page` hears the count so far.
    pub async fn list(
        &self,
        now_secs: i64,
        mut on_page: impl FnMut(usize),
    ) -> Result<Vec<Bytes>, SourceError> {
        let since =
            now_secs.saturating_sub(i64::try_from(self.lookback.as_secs()).unwrap_or(i64::MAX));
        let mut events = Vec::new();
        let mut starting_after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let page = self.page(since, starting_after.as_deref()).await?;
            let last = match page.data.last() {
                Some(last) => {
                    serde_json::from_str::<EventId>(last.get())
                        .map_err(|_| self.not_a_list())?
                        .id
                }
                None => return Ok(events),
            };
            events.extend(
                page.data
                    .iter()
                    .map(|event| Bytes::copy_from_slice(event.get().as_bytes())),
            );
            on_page(events.len());
            if !page.has_more {
                return Ok(events);
            }
            starting_after = Some(last);
        }
        Err(SourceError::TooManyPages {
            endpoint: self.endpoint_id.clone(),
        })
    }

    async fn page(
        &self,
        since: i64,
        starting_after: Option<&str>,
    ) -> Result<EventList, SourceError> {
        let query = {
            // Built whole before any await: the serializer is not `Send`.
            let mut query = form_urlencoded::Serializer::new(String::new());
            query.append_pair("created[gte]", &since.to_string());
            query.append_pair("limit", &self.page_size.to_string());
            if let Some(after) = starting_after {
                query.append_pair("starting_after", after);
            }
            query.finish()
        };
        let base = self.base_url.to_string();
        let url = format!("{}/v1/events?{query}", base.trim_end_matches('/'));
        // Marked sensitive: never printed by hyper's own Debug.
        let mut authorization =
            HeaderValue::from_str(&format!("Bearer {}", self.api_key.expose_secret()))
                .map_err(|_| self.not_a_list())?;
        authorization.set_sensitive(true);
        let request = Request::get(url)
            .header(AUTHORIZATION, authorization)
            .header(ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|_| self.not_a_list())?;
        let answer = async {
            let response = self.client.request(request).await?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_PAGE_BYTES)
                .collect()
                .await
                .map(|body| body.to_bytes());
            Ok::<_, hyper_util::client::legacy::Error>((status, body))
        };
        let (status, body) = match tokio::time::timeout(self.timeout, answer).await {
            Err(_) => {
                return Err(SourceError::Timeout {
                    endpoint: self.endpoint_id.clone(),
                    timeout: self.timeout,
                })
            }
            Ok(Err(error)) => {
                return Err(SourceError::Unreachable {
                    endpoint: self.endpoint_id.clone(),
                    reason: tls::describe_failure(&error).unwrap_or(if error.is_connect() {
                        "connect error"
                    } else {
                        "connection error"
                    }),
                })
            }
            Ok(Ok(answer)) => answer,
        };
        if !status.is_success() {
            return Err(SourceError::Status {
                endpoint: self.endpoint_id.clone(),
                status: status.as_u16(),
            });
        }
        let body = body.map_err(|_| self.not_a_list())?;
        serde_json::from_slice(&body).map_err(|_| self.not_a_list())
    }

    fn not_a_list(&self) -> SourceError {
        SourceError::NotAList {
            endpoint: self.endpoint_id.clone(),
        }
    }
}
