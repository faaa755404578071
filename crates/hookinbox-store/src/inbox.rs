//! The inbox: one row per logical event, unique per (endpoint, provider event id).

use bytes::Bytes;
use sha2::Digest;

/// The SHA-256 of a raw body: two requests with one event id and the same
/// fingerprint are the same event sent twice; a different fingerprint is a
/// conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    pub fn of(body: &[u8]) -> Fingerprint {
        Fingerprint(sha2::Sha256::digest(body).into())
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// The state of an inbox row. Only the delivery side moves a row out of
/// `Accepted`; the transitions are guarded UPDATEs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InboxStatus {
    /// Durably accepted; deliveries pending. Moved by the delivery workers
    /// when every delivery of the event is done (→ Processed) or dead (→ Failed).
    Accepted,
    /// Every target has the event. Terminal.
    Processed,
    /// A delivery exhausted its budget. Terminal until an operator replays it.
    Failed,
}

impl InboxStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            InboxStatus::Accepted => "ACCEPTED",
            InboxStatus::Processed => "PROCESSED",
            InboxStatus::Failed => "FAILED",
        }
    }

    pub fn parse(text: &str) -> Option<InboxStatus> {
        match text {
            "ACCEPTED" => Some(InboxStatus::Accepted),
            "PROCESSED" => Some(InboxStatus::Processed),
            "FAILED" => Some(InboxStatus::Failed),
            _ => None,
        }
    }
}

/// A verified event to accept.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub endpoint_id: String,
    pub provider: String,
    pub provider_event_id: String,
    pub event_type: Option<String>,
    pub object_id: Option<String>,
    pub object_version: Option<i64>,
    /// When the provider says it created the event, unix seconds.
    pub provider_created_at: Option<i64>,
    /// When this receiver read the request, unix milliseconds.
    pub received_at_ms: i64,
    pub content_type: Option<String>,
    /// The raw body bytes exactly as received and verified.
    pub payload: Bytes,
    pub fingerprint: Fingerprint,
    /// Request headers kept for audit (credentials removed by the caller).
    pub audit_headers: Vec<(String, String)>,
    pub matched_secret_version: String,
    /// The endpoint's targets: one delivery row each is inserted with a new event.
    pub targets: Vec<String>,
}

/// A stored event as a delivery worker needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub id: String,
    pub endpoint_id: String,
    pub provider: String,
    pub provider_event_id: String,
    pub event_type: Option<String>,
    pub object_id: Option<String>,
    pub object_version: Option<i64>,
    pub received_at_ms: i64,
    pub content_type: Option<String>,
    /// `None` once raw retention has purged it.
    pub payload: Option<Bytes>,
}

/// What accepting an event did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcceptOutcome {
    /// A new row was committed.
    Inserted { id: String },
    /// The same event (same id, same fingerprint) was already committed.
    Duplicate { id: String },
    /// The id is taken by an event with a different body; nothing changed.
    Conflict { id: String },
}
