//! The store's rows, read through a connection of the test's own: what a
//! test asserts about is what is on disk, not what the service says.

use std::collections::HashMap;
use std::path::Path;

/// The inbox rows as (inbox id, endpoint, provider event id), by inbox id.
pub fn inbox_rows(db: &Path) -> Vec<(String, String, String)> {
    let conn = rusqlite::Connection::open(db).expect("open db");
    let mut statement = conn
        .prepare("SELECT id, endpoint_id, provider_event_id FROM inbox ORDER BY id")
        .expect("prepare");
    statement
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

/// Inbox status by provider event id.
pub fn inbox_status(db: &Path) -> HashMap<String, String> {
    query_pairs(db, "SELECT provider_event_id, status FROM inbox")
}

/// Every delivery row as (status, last_error), by delivery id.
pub fn deliveries(db: &Path) -> Vec<(String, Option<String>)> {
    query_pairs(db, "SELECT status, last_error FROM delivery ORDER BY id")
}

/// One recorded attempt of a delivery (`delivery_attempt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// 1 for the first attempt of the delivery.
    pub attempt: i64,
    /// When its outcome was settled, unix milliseconds on the service's clock.
    pub finished_at_ms: i64,
    /// `DELIVERED`, `PENDING` (to be retried) or `DEAD`.
    pub outcome: String,
    pub error: Option<String>,
}

/// A delivery row: its state, its schedule and the attempts recorded for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The provider event id of its inbox row.
    pub event_id: String,
    pub status: String,
    pub attempts: i64,
    /// When a pending delivery is due, unix milliseconds.
    pub next_attempt_at_ms: i64,
    /// In order.
    pub attempt_log: Vec<Attempt>,
}

/// Every delivery with its attempt log, by delivery id.
pub fn delivery_log(db: &Path) -> Vec<Delivery> {
    let conn = rusqlite::Connection::open(db).expect("open db");
    let mut deliveries: Vec<(i64, Delivery)> = conn
        .prepare(
            "SELECT d.id, i.provider_event_id, d.status, d.attempts, d.next_attempt_at_ms
             FROM delivery d JOIN inbox i ON i.id = d.inbox_id ORDER BY d.id",
        )
        .expect("prepare")
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                Delivery {
                    event_id: r.get(1)?,
                    status: r.get(2)?,
                    attempts: r.get(3)?,
                    next_attempt_at_ms: r.get(4)?,
                    attempt_log: Vec::new(),
                },
            ))
        })
        .expect("query")
        .map(|r| r.expect("row"))
        .collect();
    let mut attempts = conn
        .prepare(
            "SELECT attempt, finished_at_ms, outcome, error FROM delivery_attempt
             WHERE delivery_id = ?1 ORDER BY attempt",
        )
        .expect("prepare");
    for (id, delivery) in &mut deliveries {
        delivery.attempt_log = attempts
            .query_map([*id], |r| {
                Ok(Attempt {
                    attempt: r.get(0)?,
                    finished_at_ms: r.get(1)?,
                    outcome: r.get(2)?,
                    error: r.get(3)?,
                })
            })
            .expect("query")
            .map(|r| r.expect("row"))
            .collect();
    }
    deliveries.into_iter().map(|(_, d)| d).collect()
}

/// Bytes in the payload log beside the database (all segments), as the
/// store reports them.
pub fn payload_log_bytes(db: &Path) -> u64 {
    disk_usage(db).payload_log_bytes
}

/// Segment files in the payload log beside the database, as the store
/// reports them.
pub fn payload_log_segments(db: &Path) -> u64 {
    disk_usage(db).payload_segments
}

fn disk_usage(db: &Path) -> hookinbox_store::DiskUsage {
    let stats = hookinbox_store::SqliteReader::open(db)
        .expect("open the database")
        .stats()
        .expect("stats");
    stats.disk.expect("an embedded store reports its disk use")
}

/// Every row of a two-column query.
fn query_pairs<A, B, C>(db: &Path, sql: &str) -> C
where
    A: rusqlite::types::FromSql,
    B: rusqlite::types::FromSql,
    C: FromIterator<(A, B)>,
{
    let conn = rusqlite::Connection::open(db).expect("open db");
    let mut statement = conn.prepare(sql).expect("prepare");
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}
