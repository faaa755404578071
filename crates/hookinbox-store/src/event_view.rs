//! What operators see of events (`hookinbox events list|show`).

use serde::Serialize;

/// Which events to list, newest first. Every filter is optional; they
/// combine with AND.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub status: Option<crate::InboxStatus>,
    pub endpoint_id: Option<String>,
    pub event_type: Option<String>,
    pub provider_event_id: Option<String>,
    /// Received at or after this instant, unix milliseconds.
    pub received_from_ms: Option<i64>,
    /// Received before this instant (exclusive), unix milliseconds.
    pub received_before_ms: Option<i64>,
    /// The cursor of the page to continue from: [`EventPage::next_cursor`]
    /// of the previous page. Inbox ids are UUIDv7 (time-ordered), so the
    /// cursor is the last id listed and the next page holds smaller ids: a
    /// page stays stable while new events arrive.
    pub cursor: Option<String>,
    /// Most events in one page; 0 means 100.
    pub limit: usize,
}

impl EventFilter {
    /// The page size actually used.
    pub fn page_size(&self) -> usize {
        if self.limit == 0 {
            100
        } else {
            self.limit
        }
    }
}

/// One page of `events list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventPage {
    pub events: Vec<EventSummary>,
    /// Where the next page starts; `None` when this page is the last.
    pub next_cursor: Option<String>,
}

impl EventPage {
    /// A page of `events` read with `limit + 1` rows asked for: the extra
    /// row, when present, only says that another page exists.
    pub(crate) fn from_rows(mut events: Vec<EventSummary>, page_size: usize) -> EventPage {
        let more = events.len() > page_size;
        events.truncate(page_size);
        let next_cursor = if more {
            events.last().map(|event| event.id.clone())
        } else {
            None
        };
        EventPage {
            events,
            next_cursor,
        }
    }
}

/// One line of `events list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventSummary {
    pub id: String,
    pub endpoint_id: String,
    pub provider: String,
    pub provider_event_id: String,
    pub event_type: Option<String>,
    pub status: String,
    pub received_at_ms: i64,
}

/// `events show`: metadata, deliveries and attempts; the payload only on request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventDetail {
    #[serde(flatten)]
    pub summary: EventSummary,
    pub object_id: Option<String>,
    pub object_version: Option<i64>,
    pub provider_created_at: Option<i64>,
    pub content_type: Option<String>,
    pub matched_secret_version: String,
    pub payload_sha256: String,
    pub payload_bytes: Option<usize>,
    /// When a reconciliation source fetched it from the provider's API
    /// (unix ms), because its webhook never arrived; `None` for an event
    /// that arrived as a webhook. A fetched event's body is the API's
    /// rendering of it, and its `matched_secret_version` is `api`.
    pub fetched_at_ms: Option<i64>,
    pub deliveries: Vec<DeliveryView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeliveryView {
    pub id: i64,
    pub target: String,
    pub generation: i64,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at_ms: i64,
    pub last_error: Option<String>,
    pub delivered_at_ms: Option<i64>,
    pub attempt_log: Vec<AttemptView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttemptView {
    pub attempt: i64,
    pub finished_at_ms: i64,
    pub outcome: String,
    pub error: Option<String>,
}
