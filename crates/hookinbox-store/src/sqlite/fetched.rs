//! Events a reconciliation source fetched from the provider's API: accepted
//! as any event is (`accept`), and marked as fetched when new.

use std::collections::HashSet;

use rusqlite::{params, Connection};

use super::accept;
use super::payload_log::PayloadLog;
use super::reader::SqliteReader;
use crate::prepared_event::PreparedEvent;
use crate::{AcceptOutcome, StoreError};

/// Accepts `prepared` inside the writer's transaction; a new row gets its
/// `fetched_at_ms`.
pub(crate) fn accept_fetched(
    conn: &Connection,
    payloads: &mut PayloadLog,
    prepared: &PreparedEvent,
    fetched_at_ms: i64,
) -> Result<AcceptOutcome, rusqlite::Error> {
    Ok(match accept::accept(conn, payloads, prepared)? {
        AcceptOutcome::Inserted { id } => {
            conn.prepare_cached("UPDATE inbox SET fetched_at_ms = ?2 WHERE id = ?1")?
                .execute(params![id, fetched_at_ms])?;
            AcceptOutcome::Inserted { id }
        }
        // The stored row is this event as its webhook brought it: the API
        // renders the same event with other bytes.
        AcceptOutcome::Conflict { id } => AcceptOutcome::Duplicate { id },
        duplicate => duplicate,
    })
}

impl SqliteReader {
    /// Which of `ids` the endpoint has, one lookup of the unique key each.
    pub(crate) fn known_event_ids(
        &self,
        endpoint_id: &str,
        ids: &[String],
    ) -> Result<HashSet<String>, StoreError> {
        self.with_conn(|conn| {
            let mut lookup = conn.prepare_cached(
                "SELECT 1 FROM inbox WHERE endpoint_id = ?1 AND provider_event_id = ?2",
            )?;
            let mut known = HashSet::new();
            for id in ids {
                if lookup.exists(params![endpoint_id, id])? {
                    known.insert(id.clone());
                }
            }
            Ok(known)
        })
    }
}
