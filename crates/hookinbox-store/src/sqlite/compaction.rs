//! Compaction of sparse payload segments (docs/architecture.md §6: purge
//! means gone). A segment is deleted only once no row references it
//! (`purge`), so a few live rows would keep a whole segment of purged or
//! re-sealed bodies on disk. A segment whose live bodies fill less than
//! half of its file ([`is_sparse`]) has them copied forward into the
//! writer's current segment, each row repointed in the commit that makes
//! its copy durable; the segment is then referenced by no row, and the
//! deletion op that follows removes it.
//!
//! Durability order is the payload log's own: the copies are reserved in
//! one write op of the group commit and written and fdatasynced before
//! the COMMIT that repoints their rows; the old segment is deleted only by
//! a later op, after that commit. A crash in between leaves either copies
//! no row references (garbage for the next deletion) or repointed rows
//! and an unreferenced old segment; never a row pointing at missing bytes.
//!
//! The live bodies are read outside the writer (on a reader connection,
//! from committed rows), so the writer only appends and repoints. Each row
//! is repointed guarded on its old location: a row purged or re-sealed in
//! the meantime is left alone, and its copy undone. Bytes are copied as
//! stored: a sealed body's associated data is its inbox id, not where it
//! lies. A reader that read a row's old location just before the commit
//! and opens the old file just after its deletion gets an error (a storage
//! fault: the delivery waits and retries, uncharged), never wrong bytes.
//!
//! Why half: a segment is copied only when that frees more bytes than it
//! writes, so each byte is copied less than once on average however often
//! purges run; the price is that a kept segment may hold as many purged
//! bytes as live ones until more of it is purged.

use std::time::Instant;

use bytes::Bytes;
use rusqlite::{params, Connection};

use super::group_commit::OpError;
use super::payload_log::{self, PayloadLog, PayloadRef};
use super::reader::SqliteReader;
use crate::StoreError;

/// A segment whose live bodies fill less than this percentage of its file
/// is compacted.
pub(crate) const SPARSE_BELOW_PERCENT: u64 = 50;

/// Most bytes one compaction op copies: the accepts of the same group
/// commit wait for its write.
pub(crate) const OP_BYTES: usize = 1 << 20;

/// Most rows one compaction op repoints.
const OP_ROWS: i64 = 256;

/// Whether a segment of `file_len` bytes with `live_bytes` referenced is
/// worth compacting (see the module doc).
pub(crate) fn is_sparse(live_bytes: u64, file_len: u64) -> bool {
    live_bytes.saturating_mul(100) < file_len.saturating_mul(SPARSE_BELOW_PERCENT)
}

/// Rows with a body in segment ?1, and the bytes they reference.
const SEGMENT_LIVE: &str =
    "SELECT count(*), coalesce(sum(payload_len), 0) FROM inbox WHERE payload_segment = ?1";

/// Up to ?2 rows with a body in segment ?1.
const LIVE_IN_SEGMENT: &str =
    "SELECT id, payload_offset, payload_len FROM inbox WHERE payload_segment = ?1 LIMIT ?2";

/// Moves a row's body, guarded on where it was.
const REPOINT: &str = "
    UPDATE inbox SET payload_segment = ?2, payload_offset = ?3
    WHERE id = ?1 AND payload_segment = ?4 AND payload_offset = ?5 AND payload_len = ?6";

/// The segments on disk that still hold live bodies but are sparse. One
/// indexed count per segment (`inbox_body_segment`), on `reader`'s
/// connection: the writer does not wait for it.
pub(crate) fn sparse_segments(reader: &SqliteReader) -> Result<Vec<i64>, StoreError> {
    let dir = payload_log::directory_for(reader.path());
    let numbers = payload_log::segment_numbers(&dir).map_err(StoreError::unavailable)?;
    let mut sparse = Vec::new();
    for segment in numbers {
        let (rows, live): (i64, i64) = reader.with_conn(|conn| {
            conn.prepare_cached(SEGMENT_LIVE)?
                .query_row([segment], |row| Ok((row.get(0)?, row.get(1)?)))
        })?;
        let file_len = match payload_log::segment_len(&dir, segment) {
            Ok(len) => len,
            // Deleted meanwhile by another process's purge.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(StoreError::unavailable(error)),
        };
        if rows > 0 && is_sparse(u64::try_from(live).unwrap_or(u64::MAX), file_len) {
            sparse.push(segment);
        }
    }
    Ok(sparse)
}

/// One live body to copy forward, as read from a committed row.
pub(crate) struct LiveBody {
    id: String,
    from: PayloadRef,
    bytes: Bytes,
}

/// Bytes of `bodies`, the weight of the op that copies them.
pub(crate) fn weight(bodies: &[LiveBody]) -> usize {
    bodies
        .iter()
        .map(|body| body.bytes.len())
        .sum::<usize>()
        .max(1)
}

/// Live bodies of `segment`, read from the file, up to [`OP_ROWS`] rows
/// and about [`OP_BYTES`] (always at least one row).
pub(crate) fn live_bodies(
    reader: &SqliteReader,
    segment: i64,
) -> Result<Vec<LiveBody>, StoreError> {
    let rows: Vec<(String, i64, i64)> = reader.with_conn(|conn| {
        conn.prepare_cached(LIVE_IN_SEGMENT)?
            .query_map(params![segment, OP_ROWS], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })?
            .collect()
    })?;
    let mut bodies = Vec::new();
    let mut bytes = 0;
    for (id, offset, len) in rows {
        if bytes >= OP_BYTES {
            break;
        }
        let from = PayloadRef {
            segment,
            offset,
            len,
        };
        let body = reader
            .stored_bytes(from)
            .map_err(|error| StoreError::unavailable(format!("payload of {id}: {error}")))?;
        bytes += body.len();
        bodies.push(LiveBody {
            id,
            from,
            bytes: body,
        });
    }
    Ok(bodies)
}

/// Inside a write op: appends `bodies` to the current segment and
/// repoints their rows; how many rows moved. Bodies read from the
/// writer's own current segment make it leave that segment first (unless
/// bodies of this batch are already reserved in it: then none move now).
pub(crate) fn move_forward(
    conn: &Connection,
    payloads: &mut PayloadLog,
    bodies: &[LiveBody],
    now: Instant,
) -> Result<u64, OpError> {
    let Some(first) = bodies.first() else {
        return Ok(0);
    };
    if payloads.open_segment() == Some(first.from.segment) {
        if !payloads.leave_current_segment(now) {
            return Ok(0);
        }
        payloads
            .ready_for_bodies(now)
            .map_err(|error| OpError::Unavailable(format!("payload log: {error}")))?;
    }
    let mut moved = 0;
    for body in bodies {
        let mark = payloads.mark();
        let to = payloads.reserve(&body.bytes);
        let changed = conn.prepare_cached(REPOINT)?.execute(params![
            body.id,
            to.segment,
            to.offset,
            body.from.segment,
            body.from.offset,
            body.from.len,
        ])?;
        if changed == 0 {
            payloads.rollback_to(mark);
        } else {
            moved += 1;
        }
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_row(id: &str, at: PayloadRef) -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&mut conn).unwrap();
        conn.execute(
            "INSERT INTO inbox (id, endpoint_id, provider, provider_event_id, received_at_ms,
                                payload_sha256, audit_headers, matched_secret_version, status,
                                payload_segment, payload_offset, payload_len)
             VALUES (?1, 'e', 'lab', ?1, 1000, x'00', '[]', 'v1', 'PROCESSED', ?2, ?3, ?4)",
            params![id, at.segment, at.offset, at.len],
        )
        .unwrap();
        conn
    }

    fn location(conn: &Connection, id: &str) -> (i64, i64) {
        conn.query_row(
            "SELECT payload_segment, payload_offset FROM inbox WHERE id = ?1",
            [id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap()
    }

    #[test]
    fn a_row_is_repointed_only_from_where_it_was_read() {
        let root = tempfile::tempdir().unwrap();
        let (dir, mut log) = super::super::payload_log::open_for_tests(root.path());
        log.prepare_batch(true, Instant::now()).unwrap();
        let current_segment = log.open_segment().unwrap();
        let old = PayloadRef {
            segment: 7,
            offset: 40,
            len: 5,
        };
        let conn = with_row("a", old);
        // Read before the row moved elsewhere (a rewrap, another compaction).
        let stale = LiveBody {
            id: "a".into(),
            from: PayloadRef { offset: 0, ..old },
            bytes: Bytes::from_static(b"stale"),
        };
        assert_eq!(
            move_forward(&conn, &mut log, &[stale], Instant::now()).unwrap(),
            0
        );
        assert_eq!(location(&conn, "a"), (7, 40));
        log.flush(Instant::now()).unwrap();
        let segment = dir.join(format!("{current_segment:08}.seg"));
        assert_eq!(
            std::fs::read(&segment).unwrap(),
            b"",
            "the stale copy was undone"
        );

        let current = LiveBody {
            id: "a".into(),
            from: old,
            bytes: Bytes::from_static(b"fresh"),
        };
        assert_eq!(
            move_forward(&conn, &mut log, &[current], Instant::now()).unwrap(),
            1
        );
        assert_eq!(location(&conn, "a"), (current_segment, 0));
        log.flush(Instant::now()).unwrap();
        assert_eq!(std::fs::read(&segment).unwrap(), b"fresh");
    }

    #[test]
    fn a_segment_is_sparse_below_half_live() {
        assert!(is_sparse(49, 100));
        assert!(!is_sparse(50, 100));
        assert!(is_sparse(0, 1));
        assert!(!is_sparse(0, 0));
    }
}
