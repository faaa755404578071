//! An endpoint's stream of accepted events on SQLite, in `stream_position`
//! order: places are handed out inside the write transaction (`accept`), so
//! whatever a reader sees is final (see `event_stream`).

use rusqlite::{params, Connection, OptionalExtension};

use crate::event_stream::{uuid_v7_floor, StreamCursor, StreamedEvent};

/// The endpoint's highest place so far.
pub(super) const LAST_POSITION: &str = "SELECT stream_position FROM inbox WHERE endpoint_id = ?1
     ORDER BY stream_position DESC LIMIT 1";

/// The lowest place of an event received at or after ?3; ?2 is the lowest
/// inbox id of that millisecond, so the primary key bounds the walk.
pub(super) const FIRST_POSITION_SINCE: &str = "SELECT min(stream_position) FROM inbox
     WHERE endpoint_id = ?1 AND id >= ?2 AND received_at_ms >= ?3";

pub(super) const EVENTS_AFTER: &str =
    "SELECT stream_position, id, provider, provider_event_id, event_type, received_at_ms,
            content_type
     FROM inbox
     WHERE endpoint_id = ?1 AND (stream_position, id) > (?2, ?3)
     ORDER BY stream_position, id LIMIT ?4";

/// After everything committed so far, or before the first event received
/// at or after `since_ms`.
pub(super) fn start(
    conn: &Connection,
    endpoint_id: &str,
    since_ms: Option<i64>,
) -> Result<StreamCursor, rusqlite::Error> {
    if let Some(since_ms) = since_ms {
        let first: Option<i64> = conn.prepare_cached(FIRST_POSITION_SINCE)?.query_row(
            params![endpoint_id, uuid_v7_floor(since_ms), since_ms],
            |row| row.get(0),
        )?;
        if let Some(first) = first {
            return Ok(StreamCursor::before(first));
        }
    }
    let last: Option<i64> = conn
        .prepare_cached(LAST_POSITION)?
        .query_row(params![endpoint_id], |row| row.get(0))
        .optional()?;
    Ok(StreamCursor::before(last.unwrap_or(0) + 1))
}

/// Up to `limit` events of the endpoint after `after`, in stream order.
pub(super) fn after(
    conn: &Connection,
    endpoint_id: &str,
    after: &StreamCursor,
    limit: usize,
) -> Result<Vec<StreamedEvent>, rusqlite::Error> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    conn.prepare_cached(EVENTS_AFTER)?
        .query_map(
            params![endpoint_id, after.position, after.inbox_id, limit],
            |row| {
                Ok(StreamedEvent {
                    cursor: StreamCursor {
                        position: row.get(0)?,
                        inbox_id: row.get(1)?,
                    },
                    provider: row.get(2)?,
                    provider_event_id: row.get(3)?,
                    event_type: row.get(4)?,
                    received_at_ms: row.get(5)?,
                    content_type: row.get(6)?,
                })
            },
        )?
        .collect()
}
