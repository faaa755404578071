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
//! meanwhile, keeps other processes from committing). The segment this
//! process's writer appends to is deleted too once unreferenced: the
//! writer leaves it first (`PayloadLog::leave_current_segment`). A segment
//! another process's writer still has open is caught by that writer
//! itself: it checks that its segment still has a name, and moves to a
//! new one if not (`PayloadLog::prepare_batch`).
//!
//! Each rule finds its candidates through an index (schema 6; the plans
//! are checked by `scan_plans_tests`): bodies still held by age
//! (`inbox_body_received`), events by status and age
//! (`inbox_status_received`), dead deliveries by when they died
//! (`delivery_dead`); whether a segment is still referenced, by segment
//! (`inbox_body_segment`). A batch reads at most its limit of rows from
//! an index and stops; rows it must skip (an open delivery) are the only
//! ones it may visit again. The statements have no `ORDER BY`: sorting
//! by anything but the index would read every due row to take a few.

use std::time::{Duration, Instant};

use rusqlite::{params, Connection};

use super::group_commit::OpError;
use super::payload_log::{self, PayloadLog};
use super::reader::SqliteReader;
use crate::{PurgeCounts, RetentionPolicy};

/// An event with a delivery that a worker is about to need.
const NO_OPEN_DELIVERY: &str = "NOT EXISTS (
    SELECT 1 FROM delivery d WHERE d.inbox_id = i.id AND d.status IN ('PENDING', 'LEASED'))";

/// Every status an inbox row can have (its CHECK constraint): naming them
/// lets `inbox_status_received` serve a rule by age alone.
const ANY_STATUS: &str = "i.status IN ('ACCEPTED', 'PROCESSED', 'FAILED')";

/// Ids of events whose body (and audit headers) are due (?1: the cutoff):
/// bodies in the payload log, then bodies still in `inbox_payload` (rows
/// from before the payload log, a table that only shrinks; `CROSS JOIN`
/// makes SQLite walk it and look each row up, not the other way round).
pub(crate) fn raw_payload_due() -> String {
    format!(
        "SELECT i.id FROM inbox i
         WHERE i.payload_segment IS NOT NULL AND i.received_at_ms < ?1 AND {NO_OPEN_DELIVERY}
         UNION ALL
         SELECT i.id FROM inbox_payload p CROSS JOIN inbox i ON i.id = p.inbox_id
         WHERE i.received_at_ms < ?1 AND {NO_OPEN_DELIVERY}"
    )
}

/// Ids of events due as a whole (?1: the cutoff).
pub(crate) fn events_due() -> String {
    format!(
        "SELECT i.id FROM inbox i
         WHERE {ANY_STATUS} AND i.received_at_ms < ?1 AND {NO_OPEN_DELIVERY}"
    )
}

/// Ids of dead deliveries due (?1: the cutoff). A DEAD delivery's
/// next_attempt_at_ms is when it died (`settle`).
pub(crate) const DEAD_DELIVERIES_DUE: &str =
    "SELECT d.id FROM delivery d WHERE d.status = 'DEAD' AND d.next_attempt_at_ms < ?1";

/// At most ?2 of the ids `due` selects (?2 = -1: all of them).
pub(crate) fn limited(due: &str) -> String {
    format!("{due} LIMIT ?2")
}

/// How many ids `due` selects, counting at most ?2 (-1: all).
pub(crate) fn counted(due: &str) -> String {
    format!("SELECT count(*) FROM ({due} LIMIT ?2)")
}

/// Whether payload segment ?1 is referenced by a committed row.
pub(crate) const SEGMENT_REFERENCED: &str =
    "SELECT EXISTS (SELECT 1 FROM inbox WHERE payload_segment = ?1)";

/// What is due under `policy` at `now_ms`, each rule counted up to `cap`
/// (`None`: all; a count after every batch of a large purge would read the
/// whole backlog each time).
pub(crate) fn preview(
    conn: &Connection,
    policy: &RetentionPolicy,
    now_ms: i64,
    cap: Option<usize>,
) -> Result<PurgeCounts, rusqlite::Error> {
    let cap = cap.map_or(-1, |cap| i64::try_from(cap).unwrap_or(i64::MAX));
    let count = |due: &str, cutoff: Option<i64>| -> Result<u64, rusqlite::Error> {
        let Some(cutoff) = cutoff else {
            return Ok(0);
        };
        let count: i64 = conn
            .prepare_cached(&counted(due))?
            .query_row(params![cutoff, cap], |row| row.get(0))?;
        Ok(u64::try_from(count).unwrap_or(0))
    };
    Ok(PurgeCounts {
        raw_payloads: count(
            &raw_payload_due(),
            RetentionPolicy::cutoff_ms(policy.raw_payload, now_ms),
        )?,
        events: count(
            &events_due(),
            RetentionPolicy::cutoff_ms(policy.dedup, now_ms),
        )?,
        dead_deliveries: count(
            DEAD_DELIVERIES_DUE,
            RetentionPolicy::cutoff_ms(policy.dead_deliveries, now_ms),
        )?,
    })
}

/// The ids selected by `due` (with ?1 the cutoff), at most `limit`.
fn due_ids<T: rusqlite::types::FromSql>(
    conn: &Connection,
    due: &str,
    cutoff: i64,
    limit: i64,
) -> Result<Vec<T>, rusqlite::Error> {
    conn.prepare_cached(&limited(due))?
        .query_map(params![cutoff, limit], |row| row.get(0))?
        .collect()
}

/// How long one purge op may keep the writer busy, finding and deleting:
/// the accepts committed in the same transaction wait for it, so its
/// length is what a purge adds to their latency. The `batch` a caller asks
/// for is the most an op takes; this bounds it by time on a slow disk or a
/// busy machine.
pub(crate) const OP_BUDGET: Duration = Duration::from_millis(1);

/// Items an op always purges before the time budget applies, so every op
/// progresses (and small batches, like the tests', are never cut short).
/// Also how many due ids an op reads at a time: finding them costs time
/// too (each is checked for an open delivery), and ids read past the
/// budget would be read for nothing.
pub(crate) const MIN_ITEMS_PER_OP: usize = 16;

/// The time budget of one op, over all its rules.
struct OpBudget {
    started: Instant,
    budget: Duration,
    items: usize,
}

impl OpBudget {
    fn new(budget: Duration) -> OpBudget {
        OpBudget {
            started: Instant::now(),
            budget,
            items: 0,
        }
    }

    /// Whether the op may go on.
    fn left(&self) -> bool {
        self.items < MIN_ITEMS_PER_OP || self.started.elapsed() < self.budget
    }

    /// Whether the op may purge one more item (and counts it).
    fn take(&mut self) -> bool {
        let allowed = self.left();
        if allowed {
            self.items += 1;
        }
        allowed
    }
}

/// Applies `purge_one` to the ids `due` selects (with ?1 the cutoff), at
/// most `limit`, reading them [`MIN_ITEMS_PER_OP`] at a time while the
/// budget lasts. Every id `due` returns can be purged (the statements
/// leave out what must stay), and a purged id is not selected again, so
/// each read starts on new work; a short read means the rule is done.
fn purge_due<T: rusqlite::types::FromSql>(
    conn: &Connection,
    due: &str,
    cutoff: i64,
    limit: usize,
    budget: &mut OpBudget,
    mut purge_one: impl FnMut(&T) -> Result<(), rusqlite::Error>,
) -> Result<u64, rusqlite::Error> {
    let mut purged = 0;
    while purged < limit && budget.left() {
        let wanted = (limit - purged).min(MIN_ITEMS_PER_OP);
        let ids: Vec<T> = due_ids(conn, due, cutoff, i64::try_from(wanted).unwrap_or(i64::MAX))?;
        let read = ids.len();
        for id in ids.iter().take_while(|_| budget.take()) {
            purge_one(id)?;
            purged += 1;
        }
        if read < wanted {
            break;
        }
    }
    Ok(purged as u64)
}

/// Purges up to `limit` items per rule, inside the writer's transaction:
/// whole events first (their bodies go with them), then bodies, then dead
/// deliveries; it stops early once `budget` is spent (after
/// [`MIN_ITEMS_PER_OP`]), and the next batch goes on. Returns what it purged.
pub(crate) fn purge(
    conn: &Connection,
    policy: &RetentionPolicy,
    now_ms: i64,
    limit: usize,
    budget: Duration,
) -> Result<PurgeCounts, rusqlite::Error> {
    let mut budget = OpBudget::new(budget);
    let mut purged = PurgeCounts::default();
    if let Some(cutoff) = RetentionPolicy::cutoff_ms(policy.dedup, now_ms) {
        purged.events = purge_due(
            conn,
            &events_due(),
            cutoff,
            limit,
            &mut budget,
            |id: &String| {
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
                Ok(())
            },
        )?;
    }
    if let Some(cutoff) = RetentionPolicy::cutoff_ms(policy.raw_payload, now_ms) {
        purged.raw_payloads = purge_due(
            conn,
            &raw_payload_due(),
            cutoff,
            limit,
            &mut budget,
            |id: &String| {
                // The audit headers go too; what is left of them is plain, so
                // the row names no key.
                conn.prepare_cached(
                    "UPDATE inbox SET payload_segment = NULL, payload_offset = NULL,
                                      payload_len = NULL, payload_key_id = NULL, audit_headers = '[]',
                                      payload_format = NULL, payload_raw_len = NULL
                     WHERE id = ?1",
                )?
                .execute(params![id])?;
                conn.prepare_cached("DELETE FROM inbox_payload WHERE inbox_id = ?1")?
                    .execute(params![id])?;
                Ok(())
            },
        )?;
    }
    if let Some(cutoff) = RetentionPolicy::cutoff_ms(policy.dead_deliveries, now_ms) {
        purged.dead_deliveries = purge_due(
            conn,
            DEAD_DELIVERIES_DUE,
            cutoff,
            limit,
            &mut budget,
            |id: &i64| {
                conn.prepare_cached("DELETE FROM delivery_attempt WHERE delivery_id = ?1")?
                    .execute(params![id])?;
                conn.prepare_cached("DELETE FROM delivery WHERE id = ?1")?
                    .execute(params![id])?;
                Ok(())
            },
        )?;
    }
    Ok(purged)
}

/// Deletes the payload segments that no committed row references (see the
/// module doc); how many. The one this process's writer appends to goes
/// too, once the writer has left it (docs/architecture.md §6: purge means
/// gone; a segment kept because it is current would keep purged bodies for
/// as long as the writer takes to fill it), unless bodies of this batch
/// are reserved in it. Empty segments of a killed process go the same way.
/// Runs inside a write op, so no other process commits meanwhile. Each
/// segment on disk is one indexed probe (`inbox_body_segment`), not a
/// scan of the inbox: the writer waits for this op.
pub(crate) fn delete_unreferenced_segments(
    payloads: &mut PayloadLog,
    reader: &SqliteReader,
) -> Result<u64, OpError> {
    let dir = payload_log::directory_for(reader.path());
    let mut deleted = Vec::new();
    for segment in payload_log::segment_numbers(&dir).map_err(io_error)? {
        if reader.segment_referenced(segment)? {
            continue;
        }
        if payloads.open_segment() == Some(segment)
            && !payloads.leave_current_segment(Instant::now())
        {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn with_old_events(n: usize) -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&mut conn).unwrap();
        for k in 0..n {
            conn.execute(
                "INSERT INTO inbox (id, endpoint_id, provider, provider_event_id, received_at_ms,
                                    payload_sha256, audit_headers, matched_secret_version, status)
                 VALUES (?1, 'e', 'lab', ?1, 1000, x'00', '[]', 'v1', 'PROCESSED')",
                params![format!("{k:04}")],
            )
            .unwrap();
        }
        conn
    }

    fn dedup_only() -> RetentionPolicy {
        RetentionPolicy {
            raw_payload: None,
            dedup: Some(Duration::from_secs(1)),
            dead_deliveries: None,
        }
    }

    #[test]
    fn an_op_stops_at_its_time_budget_after_the_minimum() {
        let conn = with_old_events(40);
        let spent = purge(&conn, &dedup_only(), 100_000, 1000, Duration::ZERO).unwrap();
        assert_eq!(spent.events, MIN_ITEMS_PER_OP as u64);
        let ample = purge(
            &conn,
            &dedup_only(),
            100_000,
            1000,
            Duration::from_secs(3600),
        )
        .unwrap();
        assert_eq!(ample.events, 40 - MIN_ITEMS_PER_OP as u64);
        let left: i64 = conn
            .query_row("SELECT count(*) FROM inbox", [], |row| row.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }
}
