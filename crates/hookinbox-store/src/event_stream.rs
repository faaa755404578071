//! One endpoint's accepted events as a stream that a client reads from a
//! cursor and resumes after it (`hookinbox listen`, docs/architecture.md §7).
//!
//! The stream must not skip an event. Inbox ids are UUIDv7, made before the
//! commit, and commits do not finish in id order: an event with a lower id
//! can become visible after one with a higher id was read, so "ids above
//! the last one read" would skip it. The cursor is therefore a place that
//! follows commit order, `(position, inbox id)`, read in that order:
//!
//! - **SQLite**: `inbox.stream_position` is the endpoint's highest place
//!   plus one, read and written inside the write transaction that inserts
//!   the row. Write transactions on one file are serialised (one writer
//!   thread, and SQLite's write lock between processes), so a row with a
//!   lower place committed before any row with a higher one. Everything a
//!   reader sees is final.
//! - **PostgreSQL**: `inbox.stream_xact` is the inserting transaction's id
//!   (`pg_current_xact_id()`), and a read first takes the *horizon*, the
//!   xmin of a snapshot: every transaction below it has ended, committed or
//!   rolled back, and no transaction can later get an id below it. The
//!   read, a later statement, returns only rows below the horizon, so its
//!   snapshot holds every row that will ever have such a place: nothing can
//!   appear behind the cursor afterwards. A long transaction anywhere in
//!   the cluster holds the horizon back: it delays the stream, it never
//!   makes it skip.
//!
//! Rows from before the column existed share place 0 (SQLite) or 1
//! (PostgreSQL) and are read in id order, before every later row.

use std::fmt;

/// A place in an endpoint's stream: the stream continues strictly after
/// it. Written as `<position>.<inbox id>`; a cursor with an empty id means
/// "before everything at `position`".
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StreamCursor {
    pub position: i64,
    pub inbox_id: String,
}

impl StreamCursor {
    /// Reads a cursor as [`fmt::Display`] wrote it; `None` for anything else.
    pub fn parse(text: &str) -> Option<StreamCursor> {
        let (position, inbox_id) = text.split_once('.')?;
        let position = position.parse::<i64>().ok().filter(|p| *p >= 0)?;
        let inbox_id_ok =
            inbox_id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') && inbox_id.len() <= 64;
        inbox_id_ok.then(|| StreamCursor {
            position,
            inbox_id: inbox_id.to_owned(),
        })
    }

    /// Before everything at `position`.
    pub fn before(position: i64) -> StreamCursor {
        StreamCursor {
            position,
            inbox_id: String::new(),
        }
    }
}

impl fmt::Display for StreamCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.position, self.inbox_id)
    }
}

/// One accepted event as the stream lists it; its body and headers are
/// read by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamedEvent {
    /// The stream continues after this.
    pub cursor: StreamCursor,
    pub provider: String,
    pub provider_event_id: String,
    pub event_type: Option<String>,
    pub received_at_ms: i64,
    pub content_type: Option<String>,
}

impl StreamedEvent {
    pub fn inbox_id(&self) -> &str {
        &self.cursor.inbox_id
    }
}

/// The lowest inbox id (UUIDv7) of an event received at `received_at_ms`
/// or later: its first 48 bits are the milliseconds.
pub(crate) fn uuid_v7_floor(received_at_ms: i64) -> String {
    let ms = u64::try_from(received_at_ms).unwrap_or(0) & 0xffff_ffff_ffff;
    format!(
        "{:08x}-{:04x}-0000-0000-000000000000",
        ms >> 16,
        ms & 0xffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_written() {
        let cursor = StreamCursor {
            position: 42,
            inbox_id: "0191e0c2-7a3b-7c4d-8e5f-0123456789ab".into(),
        };
        assert_eq!(StreamCursor::parse(&cursor.to_string()), Some(cursor));
        assert_eq!(
            StreamCursor::parse("7."),
            Some(StreamCursor::before(7)),
            "an empty id is before the position"
        );
        for bad in ["", "7", "-1.ab", "x.ab", "7.a'b", "7.ab cd"] {
            assert_eq!(StreamCursor::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_floor_is_below_every_id_of_that_millisecond_and_above_the_one_before() {
        let at = 1_700_000_000_123_i64;
        let ts = |ms: i64| {
            uuid::Timestamp::from_unix(
                uuid::NoContext,
                (ms / 1000) as u64,
                ((ms % 1000) * 1_000_000) as u32,
            )
        };
        let same = uuid::Uuid::new_v7(ts(at)).to_string();
        let before = uuid::Uuid::new_v7(ts(at - 1)).to_string();
        let floor = uuid_v7_floor(at);
        assert!(floor <= same, "{floor} <= {same}");
        assert!(before < floor, "{before} < {floor}");
    }
}
