//! `GET /admin/endpoints/{endpoint}/stream`: one endpoint's accepted events
//! as Server-Sent Events, read-only, each with the cursor to resume after it
//! (`hookinbox listen` reads it; docs/architecture.md §7).
//!
//! The cursor follows commit order, not id order, so a stream read from a
//! cursor cannot skip an event that committed late (the store's
//! `event_stream` module says why, per backend). New events are found by
//! polling the reader every [`POLL_INTERVAL`]: one indexed range read that
//! finds nothing while the endpoint is idle. A comment line every
//! [`HEARTBEAT`] keeps idle connections (and proxies) open.
//!
//! What an event carries: its ids, type, provider, receipt time, the
//! request headers kept for audit (an allowlist that never holds
//! credentials, docs/architecture.md §6) and the body as received. Never a
//! secret: the endpoint's secrets are not in the store.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use base64::Engine;
use futures::stream::{self, Stream};
use hookinbox_store::{StoreError, StoreReads, StreamCursor, StreamedEvent};
use serde::{Deserialize, Serialize};

use super::events::Header;
use super::{ApiError, ApiPath, ApiQuery, ErrorBody, Operator};
use crate::event_selection::time_ms;

/// How often an idle stream looks for new events.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// How often an idle stream sends a comment line.
pub const HEARTBEAT: Duration = Duration::from_secs(15);
/// Events read from the store at a time.
const BATCH: usize = 100;

/// Where the stream starts. `Last-Event-ID` (what an EventSource sends when
/// it reconnects) wins over `after`, which wins over `since`; with none of
/// them the stream starts now.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct StreamParams {
    /// Continue after this cursor (an event's `cursor`, or the `ready`
    /// event's).
    pub after: Option<String>,
    /// Start at the first event received at or after this time: unix
    /// seconds, or RFC 3339.
    pub since: Option<String>,
}

/// One accepted event, the `data` of an SSE event named `webhook` whose
/// `id` is its `cursor`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StreamedWebhook {
    /// Resume after this event (`after=`, or `Last-Event-ID`).
    pub cursor: String,
    /// The inbox id: stable, the idempotency key downstream.
    pub inbox_id: String,
    pub endpoint_id: String,
    pub provider: String,
    pub provider_event_id: String,
    pub event_type: Option<String>,
    /// Unix milliseconds, the receiver's clock.
    pub received_at_ms: i64,
    pub content_type: Option<String>,
    /// The request headers kept for audit (no credentials).
    pub headers: Vec<Header>,
    /// The raw body as received, base64; `null` once retention removed it.
    pub body_base64: Option<String>,
}

/// The first SSE event of a stream, named `ready`: where it starts.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StreamReady {
    /// Resume from here to miss nothing that the stream would have sent.
    pub cursor: String,
}

/// The endpoint's accepted events as `text/event-stream`: first a `ready`
/// event carrying the starting cursor, then one `webhook` event per
/// accepted event, in commit order, each with its cursor as the SSE `id`;
/// `: heartbeat` comments while idle. Read-only.
#[utoipa::path(
    get,
    path = "/admin/endpoints/{endpoint}/stream",
    tag = "events",
    params(
        ("endpoint" = String, Path, description = "The endpoint id"),
        ("Last-Event-ID" = Option<String>, Header, description = "Continue after this cursor"),
        StreamParams,
    ),
    responses(
        (status = 200, description = "Server-Sent Events: `ready` (StreamReady), then `webhook` (StreamedWebhook)",
         content_type = "text/event-stream", body = StreamedWebhook),
        (status = 400, description = "A parameter does not mean anything", body = ErrorBody),
        (status = 404, description = "No such endpoint", body = ErrorBody),
        (status = 503, description = "The store is unavailable", body = ErrorBody),
    )
)]
pub async fn stream(
    State(operator): State<Operator>,
    ApiPath(endpoint): ApiPath<String>,
    ApiQuery(params): ApiQuery<StreamParams>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    if let Some(keys) = &operator.keys {
        if !keys.endpoints().contains_key(&endpoint) {
            return Err(ApiError::NotFound("no such endpoint"));
        }
    }
    let last_event_id = headers
        .get("last-event-id")
        .map(|value| value.to_str().unwrap_or_default().to_owned());
    let after = last_event_id.or(params.after).filter(|c| !c.is_empty());
    let start = match after {
        Some(text) => StreamCursor::parse(&text).ok_or_else(|| {
            ApiError::bad_request("after: not a cursor this stream wrote (an event's cursor)")
        })?,
        None => {
            let since = time_ms(params.since.as_deref(), "since")?;
            operator.reads.stream_start(&endpoint, since).await?
        }
    };
    let reader = StreamReader {
        reads: Arc::clone(&operator.reads),
        endpoint,
        cursor: start,
        pending: VecDeque::new(),
        announced: false,
    };
    let events = stream::unfold(reader, |mut reader| async move {
        let event = reader.next().await?;
        Some((Ok(event), reader))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(HEARTBEAT).text("heartbeat")))
}

/// The state of one open stream.
struct StreamReader {
    reads: Arc<dyn StoreReads>,
    endpoint: String,
    /// The last event sent (or the start).
    cursor: StreamCursor,
    /// Read from the store, not yet sent.
    pending: VecDeque<StreamedEvent>,
    announced: bool,
}

impl StreamReader {
    /// The next SSE event; `None` ends the stream (the store failed: the
    /// client reconnects after its last cursor, losing nothing).
    async fn next(&mut self) -> Option<Event> {
        if !self.announced {
            self.announced = true;
            let ready = StreamReady {
                cursor: self.cursor.to_string(),
            };
            return Event::default()
                .event("ready")
                .id(ready.cursor.clone())
                .json_data(&ready)
                .ok();
        }
        loop {
            if let Some(listed) = self.pending.pop_front() {
                let loaded = self.load(&listed).await;
                self.cursor = listed.cursor.clone();
                match loaded {
                    Ok(Some(webhook)) => {
                        return Event::default()
                            .event("webhook")
                            .id(webhook.cursor.clone())
                            .json_data(&webhook)
                            .ok()
                    }
                    // Purged between the listing and now: nothing to send.
                    Ok(None) => continue,
                    Err(error) => {
                        tracing::warn!(message = "An event stream stopped: the store failed.", %error);
                        return None;
                    }
                }
            }
            match self
                .reads
                .stream_after(&self.endpoint, &self.cursor, BATCH)
                .await
            {
                Ok(listed) if listed.is_empty() => tokio::time::sleep(POLL_INTERVAL).await,
                Ok(listed) => self.pending.extend(listed),
                Err(error) => {
                    tracing::warn!(message = "An event stream stopped: the store failed.", %error);
                    return None;
                }
            }
        }
    }

    /// The event with its body and kept headers; `None` when it is gone.
    async fn load(&self, listed: &StreamedEvent) -> Result<Option<StreamedWebhook>, StoreError> {
        let id = listed.inbox_id();
        let Some((_, body)) = self.reads.show_event(id, true).await? else {
            return Ok(None);
        };
        let headers = self
            .reads
            .audit_headers(id)
            .await?
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| Header { name, value })
            .collect();
        Ok(Some(StreamedWebhook {
            cursor: listed.cursor.to_string(),
            inbox_id: id.to_owned(),
            endpoint_id: self.endpoint.clone(),
            provider: listed.provider.clone(),
            provider_event_id: listed.provider_event_id.clone(),
            event_type: listed.event_type.clone(),
            received_at_ms: listed.received_at_ms,
            content_type: listed.content_type.clone(),
            headers,
            body_base64: body.map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes)),
        }))
    }
}
