//! What operators see of events (`hookinbox events list|show`).

use serde::Serialize;

/// Which events to list.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub status: Option<crate::InboxStatus>,
    pub endpoint_id: Option<String>,
    pub limit: usize,
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
