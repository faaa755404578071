//! What operators see of events (`hookinbox events list|show`, the admin
//! API and the dashboard).

use serde::Serialize;

/// Which events to list, newest first (by receipt time, then inbox id).
/// Every filter is optional; they combine with AND.
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
    /// Where the page continues from: [`EventPage::next_cursor`] of the
    /// previous page, parsed. The next page holds only events listed after
    /// the cursor's (older), so pages stay stable while new events arrive.
    pub cursor: Option<EventCursor>,
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

/// A position in the list: the last event of a page, by the two keys the
/// list is ordered by. Written as `{received_at_ms}.{inbox id}`, which is
/// what clients pass back; anything else does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventCursor {
    pub received_at_ms: i64,
    pub id: String,
}

impl EventCursor {
    /// Parses the text [`std::fmt::Display`] writes; `None` for anything else.
    pub fn parse(text: &str) -> Option<EventCursor> {
        let (received, id) = text.split_once('.')?;
        let received_at_ms = received.parse().ok()?;
        // Inbox ids are UUIDs: refuse other text rather than compare with it.
        let id = uuid::Uuid::try_parse(id).ok()?.hyphenated().to_string();
        Some(EventCursor { received_at_ms, id })
    }
}

impl std::fmt::Display for EventCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.received_at_ms, self.id)
    }
}

/// One page of `events list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EventPage {
    pub events: Vec<EventSummary>,
    /// Where the next page starts (pass it as `cursor`); `None` when this
    /// page is the last.
    pub next_cursor: Option<String>,
}

impl EventPage {
    /// [`EventPage::next_cursor`], typed: the filter's `cursor` for the
    /// next page.
    pub fn next_page(&self) -> Option<EventCursor> {
        self.next_cursor.as_ref()?;
        self.events.last().map(|event| EventCursor {
            received_at_ms: event.received_at_ms,
            id: event.id.clone(),
        })
    }

    /// A page of `events` read with `limit + 1` rows asked for: the extra
    /// row, when present, only says that another page exists.
    pub(crate) fn from_rows(mut events: Vec<EventSummary>, page_size: usize) -> EventPage {
        let more = events.len() > page_size;
        events.truncate(page_size);
        let next_cursor = if more {
            events.last().map(|event| {
                EventCursor {
                    received_at_ms: event.received_at_ms,
                    id: event.id.clone(),
                }
                .to_string()
            })
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// The targets the event was routed to when it was accepted (one
    /// delivery row each); `None` for rows from before they were recorded.
    pub routed_to: Option<Vec<String>>,
    /// The endpoint's targets whose `event_types` or `filter` did not take
    /// it. Empty when every target took it; an event routed to none is
    /// PROCESSED ("no target matched").
    pub not_routed: Vec<String>,
    /// The event's trace (32 hex digits): the provider's `traceparent`
    /// trace when it sent one, else the ingress span's when tracing was on;
    /// each delivery's `traceparent` carries it on.
    pub trace_id: Option<String>,
    pub deliveries: Vec<DeliveryView>,
}

/// The trace id of a stored `traceparent` (`inbox.trace_parent`):
/// `00-<trace id>-<span id>-<flags>`; `None` for NULL or another shape.
pub(crate) fn trace_id_of(trace_parent: Option<String>) -> Option<String> {
    let trace_parent = trace_parent?;
    let trace_id = trace_parent.split('-').nth(1)?;
    (trace_id.len() == 32 && trace_id.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| trace_id.to_owned())
}

/// A target list column (`inbox.targets`, `inbox.not_routed`: a JSON
/// array of names) as read; `None` for NULL or a value that is not one.
pub(crate) fn target_list(column: Option<String>) -> Option<Vec<String>> {
    column.and_then(|text| serde_json::from_str(&text).ok())
}

/// One delivery of an event to one target (one row per replay generation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeliveryView {
    pub id: i64,
    pub target: String,
    pub generation: i64,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at_ms: i64,
    /// Masked when it was written: a status code, a timeout, a TLS
    /// failure; never a URL, a response body or a secret.
    pub last_error: Option<String>,
    pub delivered_at_ms: Option<i64>,
    pub attempt_log: Vec<AttemptView>,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptView {
    pub attempt: i64,
    pub finished_at_ms: i64,
    /// DELIVERED, RETRY (it failed; the delivery will be tried again) or
    /// DEAD (it failed; no more tries). See [`AttemptView::outcome_shown`].
    pub outcome: String,
    /// Masked, as `DeliveryView::last_error`.
    pub error: Option<String>,
}

impl AttemptView {
    /// An attempt's outcome as operators read it, from the stored one.
    ///
    /// `delivery_attempt.outcome` holds the status the attempt left its
    /// delivery in, so a failure to be retried is stored as `PENDING` —
    /// which read as "not tried yet" next to an error. It is shown as
    /// `RETRY`; the stored value stays (rows written by every release read
    /// the same, and nothing is migrated).
    pub fn outcome_shown(stored: String) -> String {
        if stored == "PENDING" {
            "RETRY".to_owned()
        } else {
            stored
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_attempt_to_be_retried_is_shown_as_retry() {
        let shown = |stored: &str| AttemptView::outcome_shown(stored.to_owned());
        assert_eq!(shown("PENDING"), "RETRY");
        assert_eq!(shown("DELIVERED"), "DELIVERED");
        assert_eq!(shown("DEAD"), "DEAD");
    }

    #[test]
    fn a_cursor_reads_back_what_it_writes_and_nothing_else() {
        let cursor = EventCursor {
            received_at_ms: 1_764_559_329_123,
            id: "0193f1c2-7a4e-7000-8000-000000000001".into(),
        };
        let text = cursor.to_string();
        assert_eq!(text, "1764559329123.0193f1c2-7a4e-7000-8000-000000000001");
        assert_eq!(EventCursor::parse(&text), Some(cursor));
        for bad in [
            "",
            "1764559329123",
            "x.0193f1c2-7a4e-7000-8000-000000000001",
            "1764559329123.not-a-uuid",
            "1764559329123.0193f1c2-7a4e-7000-8000-000000000001.1",
            "99999999999999999999.0193f1c2-7a4e-7000-8000-000000000001",
        ] {
            assert_eq!(EventCursor::parse(bad), None, "{bad}");
        }
    }
}
