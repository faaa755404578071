//! The inbox: one row per logical event, unique per (endpoint, provider event
//! id) and, where that id is unsigned, per (endpoint, body fingerprint)
//! within the provider's redelivery window.

use std::collections::BTreeMap;

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
    /// An event accepted without targets never is one: it is inserted
    /// Processed, in the accepting transaction.
    Accepted,
    /// Every target has the event (or it had none). Terminal, until an
    /// operator's replay makes it Accepted again.
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

/// Which metadata of an event came from request values no signature
/// covers (an id or a type read from an unsigned header). Stored with the
/// row (`inbox.unsigned_metadata`, e.g. `"event_id,event_type"`, NULL when
/// everything was signed) and sent with its deliveries, so nobody downstream
/// mistakes it for something the provider vouched for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnsignedMetadata {
    pub event_id: bool,
    pub event_type: bool,
}

impl UnsignedMetadata {
    /// The names of the unsigned fields, in a fixed order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        [("event_id", self.event_id), ("event_type", self.event_type)]
            .into_iter()
            .filter_map(|(name, unsigned)| unsigned.then_some(name))
    }

    pub fn is_empty(&self) -> bool {
        self.names().next().is_none()
    }

    /// The column value: the names joined by `,`, or NULL when every field
    /// was signed.
    pub fn to_column(&self) -> Option<String> {
        (!self.is_empty()).then(|| self.names().collect::<Vec<_>>().join(","))
    }

    /// Reads the column value; names this build does not know are ignored.
    pub fn from_column(value: Option<&str>) -> UnsignedMetadata {
        let names: Vec<&str> = value
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .collect();
        UnsignedMetadata {
            event_id: names.contains(&"event_id"),
            event_type: names.contains(&"event_type"),
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
    /// The endpoint's targets: one delivery row each is inserted with a new
    /// event, and the list is recorded with it (`inbox.targets`). With none
    /// the event is stored PROCESSED: nothing is left to do for it, and a
    /// target added later does not pick it up behind the operator's back.
    pub targets: Vec<String>,
    /// The endpoint's targets routing left out (their `event_types` or
    /// `filter` did not take the event): recorded with it
    /// (`inbox.not_routed`), no delivery row.
    pub not_routed: Vec<String>,
    /// Targets whose deliveries wait (their `delay`), in milliseconds: the
    /// delivery row is first due that long after `received_at_ms`. A
    /// target not here is due at once.
    pub delays_ms: BTreeMap<String, i64>,
    /// Metadata taken from unsigned request values, stored with the row.
    pub unsigned_metadata: UnsignedMetadata,
    /// Set when the event id is not covered by the signature, to the
    /// provider's redelivery window in milliseconds: a row of the same
    /// endpoint with the same body fingerprint received within it (and
    /// itself stored with unsigned metadata) is this same event, re-sent
    /// under another id. `None` when the id is signed: it alone says which
    /// event this is, and two ids with one body are two events.
    pub fingerprint_window_ms: Option<i64>,
    /// The W3C `traceparent` of the span this event's deliveries continue
    /// (`inbox.trace_parent`): the ingress span when tracing is on, else
    /// the provider's own when it sent one; `None`: no trace.
    pub trace_parent: Option<String>,
}

impl NewEvent {
    /// When the delivery row of `target` is first due (and its `max_age`
    /// starts): at receipt, or its `delay` later.
    pub fn first_due_ms(&self, target: &str) -> i64 {
        let delay_ms = self.delays_ms.get(target).copied().unwrap_or(0);
        self.received_at_ms.saturating_add(delay_ms)
    }
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
    /// Which of the metadata above came from unsigned request values.
    pub unsigned_metadata: UnsignedMetadata,
    /// The `traceparent` its deliveries continue ([`NewEvent::trace_parent`]).
    pub trace_parent: Option<String>,
}

/// What accepting an event did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcceptOutcome {
    /// A new row was committed.
    Inserted { id: String },
    /// The same event was already committed: same id and fingerprint, or,
    /// for an event whose id is unsigned, the same fingerprint within the
    /// redelivery window (`NewEvent::fingerprint_window_ms`).
    Duplicate { id: String },
    /// The id is taken by an event with a different body; nothing changed.
    Conflict { id: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_metadata_column_round_trips() {
        let both = UnsignedMetadata {
            event_id: true,
            event_type: true,
        };
        assert_eq!(both.to_column().as_deref(), Some("event_id,event_type"));
        assert_eq!(
            UnsignedMetadata::from_column(Some("event_id,event_type")),
            both
        );
        let type_only = UnsignedMetadata {
            event_id: false,
            event_type: true,
        };
        assert_eq!(type_only.to_column().as_deref(), Some("event_type"));
        assert_eq!(UnsignedMetadata::default().to_column(), None);
        assert_eq!(
            UnsignedMetadata::from_column(None),
            UnsignedMetadata::default()
        );
        // A name a later build may add is ignored, not an error.
        assert_eq!(
            UnsignedMetadata::from_column(Some("event_type,object_id")),
            type_only
        );
    }
}
