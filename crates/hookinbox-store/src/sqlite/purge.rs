//! Retention on SQLite (`SqliteStore::purge_batch`, see `crate::retention`
//! for the rules): one write op of the group commit removes up to a
//! limit of rows per rule; a second op, after that one committed, deletes
//! the payload segments no row references any more.
//!
//! Why two ops: a segment may only go once the rows that referenced it are
//! gone for good. Deleted inside the transaction that drops the references,
//! a failed COMMIT would bring the references back to a missing file. So
//! the second op looks at the committed references (through the reader's
//! connection, which sees only committed rows; the writer's lock, held
//! meanwhile, keeps other processes from committing) and never deletes the
//! segment this process's writer appends to. A segment another process's
//! writer still has open is caught by that writer itself: it checks before
//! each write that its segment still has a name, and moves to a new one if
//! not (`PayloadLog::flush`).
//!
//! The candidates are found by scans of the inbox and the outbox: fine for
//! batches run now and then; an index on `received_at_ms` alone is the
//! next step if purges become frequent on large inboxes.

use std::collections::HashSet;

use rusqlite::{params, Connection};

use super::group_commit::OpError;
use super::payload_log::{self, PayloadLog};
use super::reader::SqliteReader;
use crate::{PurgeCounts, RetentionPolicy};

/// An event with a delivery that a worker is about to need.
const NO_OPEN_DELIVERY: &str = "NOT EXISTS (
    SELECT 1 FROM delivery d WHERE d.inbox_id = i.id AND d.status IN ('PENDING', 'LEASED'))";

fn raw_payload_due(select: &str) -> String {
    format!(
        "SELECT {select} FROM inbox i
         WHERE i.received_at_ms < ?1
           AND (i.payload_segment IS NOT NULL
                OR EXISTS (SELECT 1 FROM inbox_payload p WHERE p.inbox_id = i.id))
           AND {NO_OPEN_DELIVERY}"
    )
}

fn events_due(select: &str) -> String {
    format!("SELECT {select} FROM inbox i WHERE i.received_at_ms < ?1 AND {NO_OPEN_DELIVERY}")
}

fn dead_deliveries_due(select: &str) -> String {
    // A DEAD delivery's next_attempt_at_ms is when it died (`settle`).
    format!("SELECT {select} FROM delivery d WHERE d.status = 'DEAD' AND d.next_attempt_at_ms < ?1")
}

/// What is due under `policy` at `now_ms`.
pub(crate) fn preview(
    conn: &Connection,
    policy: &RetentionPolicy,
    now_ms: i64,
) -> Result<PurgeCounts, rusqlite::Error> {
    let count = |sql: String, cutoff: Option<i64>| -> Result<u64, rusqlite::Error> {
        let Some(cutoff) = cutoff else {
            return Ok(0);
        };
        let count: i64 = conn
            .prepare_cached(&sql)?
            .query_row(params![cutoff], |row| row.get(0))?;
        Ok(u64::try_from(count).unwrap_or(0))
    };
    Ok(PurgeCounts {
        raw_payloads: count(
            raw_payload_due("count(*)"),
            RetentionPolicy::cutoff_ms(policy.raw_payload, now_ms),
        )?,
        events: count(
            events_due("count(*)"),
            RetentionPolicy::cutoff_ms(policy.dedup, now_ms),
        )?,
        dead_deliveries: count(
            dead_deliveries_due("count(*)"),
            RetentionPolicy::cutoff_ms(policy.dead_deliveries, now_ms),
        )?,
    })
}

/// The ids selected by `sql` (with ?1 the cutoff), at most `limit`.
fn due_ids<T: rusqlite::types::FromSql>(
    conn: &Connection,
    sql: String,
    cutoff: i64,
    limit: i64,
) -> Result<Vec<T>, rusqlite::Error> {
    conn.prepare_cached(&format!("{sql} ORDER BY 1 LIMIT ?2"))?
        .query_map(params![cutoff, limit], |row| row.get(0))?
        .collect()
}

/// Purges up to `limit` items per rule, inside the writer's transaction:
/// whole events first (their bodies go with them), then bodies, then dead
/// deliveries. Returns what it purged.
pub(crate) fn purge(
    conn: &Connection,
    policy: &RetentionPolicy,
    now_ms: i64,
    limit: usize,
) -> Result<PurgeCounts, rusqlite::Error> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut purged = PurgeCounts::default();
    if let Some(cutoff) = RetentionPolicy::cutoff_ms(policy.dedup, now_ms) {
        let ids: Vec<String> = due_ids(conn, events_due("i.id"), cutoff, limit)?;
        for id in &ids {
            conn.prepare_cached(
                "DELETE FROM delivery_attempt
                 WHERE delivery_id IN (SELECT id FROM delivery WHERE inbox_id = ?1)",
            )?
            .execute(params![id])?;
            conn.prepare_cached("DELETE FROM delivery WHERE inbox_id = ?1")?
                .execute(params![id])?;
            conn.prepare_cached("DELETE FROM inbox_payload WHERE inbox_id = ?1")?
                .execute(params![id])?;
            conn.prepare_cached("DELETE FROM inbox WHERE id = ?1")?
                .execute(params![id])?;
        }
        purged.events = ids.len() as u64;
    }
    if let Some(cutoff) = RetentionPolicy::cutoff_ms(policy.raw_payload, now_ms) {
        let ids: Vec<String> = due_ids(conn, raw_payload_due("i.id"), cutoff, limit)?;
        for id in &ids {
            // The audit headers go too; what is left of them is plain, so
            // the row names no key.
            conn.prepare_cached(
                "UPDATE inbox SET payload_segment = NULL, payload_offset = NULL,
                                  payload_len = NULL, payload_key_id = NULL, audit_headers = '[]'
                 WHERE id = ?1",
            )?
            .execute(params![id])?;
            conn.prepare_cached("DELETE FROM inbox_payload WHERE inbox_id = ?1")?
                .execute(params![id])?;
        }
        purged.raw_payloads = ids.len() as u64;
    }
    if let Some(cutoff) = RetentionPolicy::cutoff_ms(policy.dead_deliveries, now_ms) {
        let ids: Vec<i64> = due_ids(conn, dead_deliveries_due("d.id"), cutoff, limit)?;
        for id in &ids {
            conn.prepare_cached("DELETE FROM delivery_attempt WHERE delivery_id = ?1")?
                .execute(params![id])?;
            conn.prepare_cached("DELETE FROM delivery WHERE id = ?1")?
                .execute(params![id])?;
        }
        purged.dead_deliveries = ids.len() as u64;
    }
    Ok(purged)
}

/// Deletes the payload segments that no committed row references, except
/// the one this process's writer appends to (see the module doc); how
/// many. Runs inside a write op, so no other process commits meanwhile.
pub(crate) fn delete_unreferenced_segments(
    payloads: &PayloadLog,
    reader: &SqliteReader,
) -> Result<u64, OpError> {
    let referenced: HashSet<i64> = reader.referenced_segments()?;
    let dir = payload_log::directory_for(reader.path());
    let mut deleted = Vec::new();
    for segment in payload_log::segment_numbers(&dir).map_err(io_error)? {
        if referenced.contains(&segment) || segment == payloads.current_segment() {
            continue;
        }
        payload_log::delete_segment(&dir, segment).map_err(io_error)?;
        deleted.push(segment);
    }
    reader.forget_segments(&deleted);
    Ok(deleted.len() as u64)
}

fn io_error(error: std::io::Error) -> OpError {
    OpError::Unavailable(format!("payload log: {error}"))
}
