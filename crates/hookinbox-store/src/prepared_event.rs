//! An event made ready for an accept transaction, on either backend: what
//! can be computed before the transaction (its would-be id, the audit
//! headers as JSON, the body compressed, both sealed when there are keys)
//! is, so the
//! transaction — the SQLite writer thread, a PostgreSQL batch — spends its
//! time on the inserts only.
//!
//! A large body is prepared on tokio's blocking pool ([`PreparedEvent::prepare`]),
//! as ingress verifies one there: zstd and the AEAD take ~7 ns per byte of
//! the benchmark's mix (bench/RESULTS.md, "Compression" and §18), 7 ms for a
//! 1 MB body and ~0.4 s at the 64 MiB an endpoint may allow, which on a
//! runtime worker every other request queued on that worker would wait for.

use std::sync::Arc;

use crate::sealed;
use crate::stored_body::StoredBody;
use crate::{EncryptionKeys, InboxStatus, NewEvent, StoreError};

/// Bodies at least this long are prepared off the runtime's workers: from
/// here on, compression and sealing take longer (~0.2 ms at 32 KiB) than
/// handing the work to another thread does (the threshold ingress uses for
/// verification, `hookinbox/src/ingress/receive.rs`).
pub(crate) const OFF_WORKER_BYTES: usize = 32 * 1024;

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
    /// [`PreparedEvent::new`] for an async caller: a body of
    /// [`OFF_WORKER_BYTES`] or more is prepared on tokio's blocking pool.
    pub(crate) async fn prepare(
        event: NewEvent,
        keys: Option<&Arc<EncryptionKeys>>,
    ) -> Result<PreparedEvent, StoreError> {
        if event.payload.len() < OFF_WORKER_BYTES {
            return PreparedEvent::new(event, keys.map(Arc::as_ref));
        }
        let keys = keys.cloned();
        tokio::task::spawn_blocking(move || PreparedEvent::new(event, keys.as_deref()))
            .await
            .map_err(|_| StoreError::unavailable("the event's preparation stopped".to_owned()))?
    }

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
