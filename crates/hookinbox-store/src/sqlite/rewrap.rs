//! Re-sealing rows under the active key (`SqliteStore::rewrap_batch`): a
//! batch of rows whose `payload_key_id` is not the active key (plain rows
//! included) is opened with its old key, checked against its fingerprint,
//! and sealed again under the active one, inside one write op of the group
//! commit.
//!
//! The payload log is append-only, so a re-sealed body is appended as a new
//! record in the current segment, and the row's reference (segment, offset,
//! length) moves to it. The old bytes stay where they were, referenced by
//! no row, until their segment is deleted: when the rewrap completes,
//! `SqliteStore::rewrap_batch` compacts and deletes the segments it left
//! unreferenced or sparse, whether or not a retention rule is set
//! (docs/architecture.md §6). So that the old-key segments empty out, the
//! re-sealed bodies never go to a segment that holds bodies being
//! re-sealed: a batch that finds one in the writer's current segment makes
//! the writer leave it first (if bodies of the batch in progress are
//! already reserved in it, they stay, and compaction moves them). A body still
//! in `inbox_payload` (rows from before the payload log) moves to the log
//! the same way, and its `inbox_payload` row is deleted. The audit headers
//! are re-sealed in place, under the same key id as the body.
//!
//! A body is re-sealed the way an accept seals it (`StoredBody::new`):
//! compressed when that makes it smaller, so a compressed body stays
//! compressed (the same bytes compress the same way), and a body from
//! before compression is compressed now if it gains from it. Its row's
//! `payload_format` and `payload_raw_len` move with it.
//!
//! Rows inserted earlier in the same group commit can reference bytes the
//! log has reserved but not yet written; they are never picked here,
//! because accepts seal under the active key of this same store.

use std::time::Instant;

use rusqlite::{params, Connection};

use super::group_commit::OpError;
use super::payload_log::PayloadLog;
use super::reader::{SqliteReader, StoredPayload};
use crate::sealed;
use crate::stored_body::StoredBody;
use crate::{EncryptionKeys, RewrapProgress};

/// The rows not under key ?1, as ranges of `inbox_key_id` (schema
/// 6): `<>` alone would be read as a scan of the whole inbox.
const NOT_UNDER: &str =
    "(i.payload_key_id IS NULL OR i.payload_key_id < ?1 OR i.payload_key_id > ?1)";

/// Up to ?2 rows not under key ?1. No `ORDER BY`: after a rotation every
/// row is due, and sorting them would read them all for each batch.
pub(crate) fn not_under_key() -> String {
    format!(
        "SELECT i.id, i.payload_sha256, i.payload_segment, i.payload_offset, i.payload_len,
                p.payload, i.payload_key_id, i.payload_format, i.payload_raw_len, i.audit_headers
         FROM inbox i LEFT JOIN inbox_payload p ON p.inbox_id = i.id
         WHERE {NOT_UNDER} LIMIT ?2"
    )
}

pub(crate) fn count_not_under() -> String {
    format!("SELECT count(*) FROM inbox i WHERE {NOT_UNDER}")
}

const UPDATE_ROW: &str = "
    UPDATE inbox SET payload_segment = ?2, payload_offset = ?3, payload_len = ?4,
                     payload_key_id = ?5, audit_headers = ?6, payload_format = ?7,
                     payload_raw_len = ?8
    WHERE id = ?1";

/// How many rows are not sealed under `active_id`.
pub(crate) fn count_not_under_key(
    conn: &Connection,
    active_id: &str,
) -> Result<u64, rusqlite::Error> {
    let count: i64 = conn
        .prepare_cached(&count_not_under())?
        .query_row(params![active_id], |row| row.get(0))?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// One row as it is before re-sealing.
struct OldRow {
    id: String,
    payload: StoredPayload,
    key_id: Option<String>,
    audit_headers: String,
}

/// Re-seals up to `limit` rows under the active key of `keys`, inside the
/// writer's transaction. `reader` opens the old records (its keys are the
/// store's). A row that cannot be opened (unknown key, tampered bytes)
/// fails the whole op as `Corrupt`, naming it: nothing of the batch is
/// changed.
pub(crate) fn rewrap(
    conn: &Connection,
    payloads: &mut PayloadLog,
    reader: &SqliteReader,
    keys: &EncryptionKeys,
    limit: usize,
) -> Result<RewrapProgress, OpError> {
    let active = keys.active_id();
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows: Vec<OldRow> = conn
        .prepare_cached(&not_under_key())?
        .query_map(params![active, limit], |row| {
            Ok(OldRow {
                id: row.get(0)?,
                payload: StoredPayload::from_row(row, 1)?,
                key_id: row.get(6)?,
                audit_headers: row.get(9)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    leave_segment_being_resealed(payloads, &rows)?;
    let mut rewrapped = 0;
    for row in rows {
        let had_legacy_body = row.payload.legacy.is_some();
        let body = reader.payload(&row.id, row.payload)?;
        let stored = body
            .map(|body| StoredBody::new(Some(keys), &row.id, &body))
            .transpose()?;
        let location = stored
            .as_ref()
            .map(|stored| payloads.reserve(&stored.bytes));
        let audit_json = sealed::open_audit_json(
            Some(keys),
            row.key_id.as_deref(),
            &row.id,
            &row.audit_headers,
        )?;
        let audit_headers = sealed::seal_audit_headers(Some(keys), &row.id, &audit_json)?;
        conn.prepare_cached(UPDATE_ROW)?.execute(params![
            row.id,
            location.map(|l| l.segment),
            location.map(|l| l.offset),
            location.map(|l| l.len),
            active,
            audit_headers,
            stored.as_ref().map(|stored| stored.format.column()),
            stored.as_ref().map(StoredBody::raw_len_column),
        ])?;
        if had_legacy_body {
            conn.prepare_cached("DELETE FROM inbox_payload WHERE inbox_id = ?1")?
                .execute(params![row.id])?;
        }
        rewrapped += 1;
    }
    Ok(RewrapProgress {
        rewrapped,
        remaining: count_not_under_key(conn, active)?,
    })
}

/// Makes the writer leave its current segment if one of `rows` has its
/// body there (see the module doc).
fn leave_segment_being_resealed(payloads: &mut PayloadLog, rows: &[OldRow]) -> Result<(), OpError> {
    let Some(current) = payloads.open_segment() else {
        return Ok(());
    };
    if !rows
        .iter()
        .any(|row| row.payload.segment() == Some(current))
    {
        return Ok(());
    }
    let now = Instant::now();
    if payloads.leave_current_segment(now) {
        payloads
            .ready_for_bodies(now)
            .map_err(|error| OpError::Unavailable(format!("payload log: {error}")))?;
    }
    Ok(())
}
