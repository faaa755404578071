//! The writer thread: it owns the one write connection and commits every
//! request waiting in its queue in one transaction (group commit). Each
//! caller is answered only after the COMMIT of its batch returned, so a 2xx
//! never precedes the fsync that makes the event survive a crash.
//!
//! If anything in a batch fails, the whole transaction rolls back and every
//! caller in it gets `Unavailable` (a retryable 503): the provider sends again
//! and nothing half-written is ever acknowledged.

use std::sync::mpsc::{Receiver, TryRecvError};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use tokio::sync::oneshot;

use crate::{AcceptOutcome, NewEvent, StoreError};

/// One caller waiting for its event to be committed.
pub(crate) struct WriteRequest {
    pub event: NewEvent,
    pub reply: oneshot::Sender<Result<AcceptOutcome, StoreError>>,
}

/// Limits on one group commit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchLimits {
    pub max_events: usize,
    pub max_bytes: usize,
}

const INSERT_SQL: &str = "
    INSERT INTO inbox (
        id, endpoint_id, provider, provider_event_id, event_type, object_id, object_version,
        provider_created_at, received_at_ms, content_type, payload, payload_sha256,
        audit_headers, matched_secret_version
    ) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
    ON CONFLICT (endpoint_id, provider_event_id) DO NOTHING
    RETURNING id";

const LOOKUP_SQL: &str =
    "SELECT id, payload_sha256 FROM inbox WHERE endpoint_id = ?1 AND provider_event_id = ?2";

/// Runs until every sender is dropped, then returns after the last batch.
pub(crate) fn run(mut conn: Connection, queue: Receiver<WriteRequest>, limits: BatchLimits) {
    while let Ok(first) = queue.recv() {
        let mut bytes = first.event.payload.len();
        let mut batch = vec![first];
        while batch.len() < limits.max_events && bytes < limits.max_bytes {
            match queue.try_recv() {
                Ok(next) => {
                    bytes += next.event.payload.len();
                    batch.push(next);
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        match commit(&mut conn, &batch) {
            Ok(outcomes) => {
                for (request, outcome) in batch.into_iter().zip(outcomes) {
                    // A caller that went away (client disconnected) is fine:
                    // its event is committed and a retry will be a duplicate.
                    let _ = request.reply.send(Ok(outcome));
                }
            }
            Err(error) => {
                tracing::error!(message = "Group commit failed; batch rolled back.", %error, events = batch.len());
                for request in batch {
                    let _ = request
                        .reply
                        .send(Err(StoreError::Unavailable(error.to_string())));
                }
            }
        }
    }
}

fn commit(
    conn: &mut Connection,
    batch: &[WriteRequest],
) -> Result<Vec<AcceptOutcome>, rusqlite::Error> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut outcomes = Vec::with_capacity(batch.len());
    {
        let mut insert = tx.prepare_cached(INSERT_SQL)?;
        let mut lookup = tx.prepare_cached(LOOKUP_SQL)?;
        for WriteRequest { event, .. } in batch {
            let id = uuid::Uuid::now_v7().to_string();
            let audit_headers =
                serde_json::to_string(&event.audit_headers).unwrap_or_else(|_| "[]".to_owned());
            let inserted: Option<String> = insert
                .query_row(
                    params![
                        id,
                        event.endpoint_id,
                        event.provider,
                        event.provider_event_id,
                        event.event_type,
                        event.object_id,
                        event.object_version,
                        event.provider_created_at,
                        event.received_at_ms,
                        event.content_type,
                        event.payload.as_ref(),
                        event.fingerprint.as_bytes(),
                        audit_headers,
                        event.matched_secret_version,
                    ],
                    |row| row.get(0),
                )
                .optional()?;
            let outcome = match inserted {
                Some(id) => AcceptOutcome::Inserted { id },
                None => {
                    let (id, fingerprint): (String, Vec<u8>) = lookup
                        .query_row(params![event.endpoint_id, event.provider_event_id], |row| {
                            Ok((row.get(0)?, row.get(1)?))
                        })?;
                    if fingerprint == event.fingerprint.as_bytes() {
                        AcceptOutcome::Duplicate { id }
                    } else {
                        AcceptOutcome::Conflict { id }
                    }
                }
            };
            outcomes.push(outcome);
        }
    }
    tx.commit()?;
    Ok(outcomes)
}
