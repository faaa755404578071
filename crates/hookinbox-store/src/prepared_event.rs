//! An event made ready for an accept transaction, on either backend: what
//! can be computed before the transaction (its would-be id, the audit
//! headers as JSON, both sealed when there are keys) is, so the
//! transaction — the SQLite writer thread, a PostgreSQL batch — spends its
//! time on the inserts only.

use bytes::Bytes;

use crate::sealed::{self, RecordKind};
use crate::{EncryptionKeys, NewEvent, StoreError};

pub(crate) struct PreparedEvent {
    pub(crate) id: String,
    /// The `audit_headers` column: JSON, or sealed JSON in base64.
    pub(crate) audit_headers: String,
    /// The body as stored (payload log record, `inbox_payload.payload`):
    /// raw, or sealed.
    pub(crate) stored_body: Bytes,
    /// The key that sealed the body and the audit headers; `None`: plain.
    pub(crate) key_id: Option<String>,
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
        let (stored_body, key_id) = match keys {
            None => (event.payload.clone(), None),
            Some(keys) => {
                let sealed = sealed::seal(keys, RecordKind::Payload, &id, &event.payload)?;
                (Bytes::from(sealed.bytes), Some(sealed.key_id))
            }
        };
        Ok(PreparedEvent {
            id,
            audit_headers,
            stored_body,
            key_id,
            event,
        })
    }
}
