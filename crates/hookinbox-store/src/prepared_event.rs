//! An event made ready for an accept transaction, on either backend: what
//! can be computed before the transaction (its would-be id, the audit
//! headers as JSON, the body compressed, both sealed when there are keys)
//! is, so the
//! transaction — the SQLite writer thread, a PostgreSQL batch — spends its
//! time on the inserts only.

use crate::sealed;
use crate::stored_body::StoredBody;
use crate::{EncryptionKeys, InboxStatus, NewEvent, StoreError};

pub(crate) struct PreparedEvent {
    pub(crate) id: String,
    /// The `audit_headers` column: JSON, or sealed JSON in base64.
    pub(crate) audit_headers: String,
    /// The body as stored (payload log record, `inbox_payload.payload`):
    /// as received or compressed, then sealed or not. Its key sealed the
    /// audit headers too.
    pub(crate) stored_body: StoredBody,
    /// The `targets` column: the endpoint's targets as a JSON array (`[]`:
    /// none, so the row is PROCESSED as it is inserted).
    pub(crate) targets: String,
    /// The `not_routed` column: the targets routing left out as a JSON
    /// array; `None` (NULL) when it left out none.
    pub(crate) not_routed: Option<String>,
    pub(crate) event: NewEvent,
}

impl PreparedEvent {
    pub(crate) fn new(
        event: NewEvent,
        keys: Option<&EncryptionKeys>,
    ) -> Result<PreparedEvent, StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        let audit_json =
            serde_json::to_string(&event.audit_headers).unwrap_or_else(|_| "[]".to_owned());
        let audit_headers = sealed::seal_audit_headers(keys, &id, &audit_json)?;
        let stored_body = StoredBody::new(keys, &id, &event.payload)?;
        let targets = serde_json::to_string(&event.targets).unwrap_or_else(|_| "[]".to_owned());
        let not_routed = (!event.not_routed.is_empty())
            .then(|| serde_json::to_string(&event.not_routed).unwrap_or_else(|_| "[]".to_owned()));
        Ok(PreparedEvent {
            id,
            audit_headers,
            stored_body,
            targets,
            not_routed,
            event,
        })
    }

    /// The status the row is inserted with: an event without targets has
    /// nothing left to do, so it is PROCESSED in the accepting transaction
    /// (docs/architecture.md §4: every accepted event ends PROCESSED or FAILED).
    pub(crate) fn initial_status(&self) -> InboxStatus {
        if self.event.targets.is_empty() {
            InboxStatus::Processed
        } else {
            InboxStatus::Accepted
        }
    }
}
