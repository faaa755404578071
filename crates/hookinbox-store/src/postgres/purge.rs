//! Retention on PostgreSQL (`PostgresStore::purge_batch`, see
//! `crate::retention` for the rules): one short transaction removes up to
//! a limit of rows per rule. The inbox rows are taken `FOR UPDATE SKIP
//! LOCKED`: a row a worker is settling right now is left for a later
//! batch instead of waited for, and a replay that reopens an event first
//! keeps it (its new PENDING delivery then rules it out).
//!
//! Each rule finds its candidates through an index (migration 8; the
//! plans are checked by `scan_plans_tests`): bodies by age
//! (`inbox_payload_received`), events by status and age
//! (`inbox_status_received`), dead deliveries by when they died
//! (`delivery_dead`). No `ORDER BY`: a batch takes the first rows the
//! index gives and stops, instead of sorting every due row to take a few.
//! Partitioning the inbox by received time is the plan for very large
//! ones (docs/architecture.md §9).

use deadpool_postgres::{GenericClient, Transaction};

use super::db_error::PgError;
use super::first_column::first_column;
use crate::{PurgeCounts, RetentionPolicy};

/// The event `id` (a column) has a delivery that a worker is about to need.
fn open_delivery(id: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM delivery d WHERE d.inbox_id = {id} AND d.status IN ('PENDING', 'LEASED'))"
    )
}

/// Every status an inbox row can have (its CHECK constraint): naming them
/// lets `inbox_status_received` serve a rule by age alone.
const ANY_STATUS: &str = "i.status IN ('ACCEPTED', 'PROCESSED', 'FAILED')";

/// Bodies due ($1: the cutoff), as `p`: found and checked without the
/// inbox rows, which only the purge itself needs (to lock and update).
pub(crate) fn raw_payload_due() -> String {
    format!(
        "FROM inbox_payload p WHERE p.received_at_ms < $1 AND NOT {}",
        open_delivery("p.inbox_id")
    )
}

/// Events due as a whole ($1: the cutoff).
pub(crate) fn events_due() -> String {
    format!(
        "FROM inbox i WHERE {ANY_STATUS} AND i.received_at_ms < $1 AND NOT {}",
        open_delivery("i.id")
    )
}

/// A DEAD delivery's next_attempt_at_ms is when it died (`settle_many`).
pub(crate) const DEAD_DELIVERIES_DUE: &str =
    "FROM delivery d WHERE d.status = 'DEAD' AND d.next_attempt_at_ms < $1";

/// Counts the rows `from` selects, at most $2 (NULL: all).
pub(crate) fn counted(from: &str, select: &str) -> String {
    format!("SELECT count(*) FROM (SELECT {select} {from} LIMIT $2) due")
}

/// What is due under `policy` at `now_ms`, each rule counted up to `cap`
/// (`None`: all; a count after every batch of a large purge would read the
/// whole backlog each time).
pub(crate) async fn preview(
    client: &impl GenericClient,
    policy: &RetentionPolicy,
    now_ms: i64,
    cap: Option<usize>,
) -> Result<PurgeCounts, PgError> {
    let cap: Option<i64> = cap.map(|cap| i64::try_from(cap).unwrap_or(i64::MAX));
    let count = |sql: String, cutoff: Option<i64>| async move {
        let Some(cutoff) = cutoff else {
            return Ok::<u64, PgError>(0);
        };
        let statement = client.prepare_cached(&sql).await?;
        let count: i64 = client
            .query_one(&statement, &[&cutoff, &cap])
            .await?
            .try_get(0)?;
        Ok(u64::try_from(count).unwrap_or(0))
    };
    Ok(PurgeCounts {
        raw_payloads: count(
            counted(&raw_payload_due(), "1"),
            RetentionPolicy::cutoff_ms(policy.raw_payload, now_ms),
        )
        .await?,
        events: count(
            counted(&events_due(), "1"),
            RetentionPolicy::cutoff_ms(policy.dedup, now_ms),
        )
        .await?,
        dead_deliveries: count(
            counted(DEAD_DELIVERIES_DUE, "1"),
            RetentionPolicy::cutoff_ms(policy.dead_deliveries, now_ms),
        )
        .await?,
    })
}

/// Deletes up to $2 events due as a whole ($1: the cutoff), all but the
/// inbox rows, and returns their ids.
pub(crate) fn purge_events() -> String {
    format!(
        "WITH due AS (
             SELECT i.id {} LIMIT $2 FOR UPDATE OF i SKIP LOCKED
         ), attempts AS (
             DELETE FROM delivery_attempt a USING delivery d, due
             WHERE a.delivery_id = d.id AND d.inbox_id = due.id
         ), deliveries AS (
             DELETE FROM delivery d USING due WHERE d.inbox_id = due.id
         ), payloads AS (
             DELETE FROM inbox_payload p USING due WHERE p.inbox_id = due.id
         )
         SELECT id FROM due",
        events_due()
    )
}

/// Drops up to $2 bodies due ($1: the cutoff) and their events' audit
/// headers (what is left of them is plain, so the row names no key). The
/// bodies are taken first, then their inbox rows locked one by one: as
/// one join, the planner may prefer hashing the whole inbox.
pub(crate) fn purge_raw_payloads() -> String {
    format!(
        "WITH candidates AS (
             SELECT p.inbox_id AS id {} LIMIT $2
         ), due AS (
             SELECT i.id FROM inbox i JOIN candidates c ON c.id = i.id FOR UPDATE OF i SKIP LOCKED
         ), rows AS (
             UPDATE inbox i SET audit_headers = '[]', payload_key_id = NULL
             FROM due WHERE i.id = due.id
         )
         DELETE FROM inbox_payload p USING due WHERE p.inbox_id = due.id",
        raw_payload_due()
    )
}

/// Deletes the attempts of up to $2 dead deliveries due ($1: the cutoff)
/// and returns the deliveries' ids.
pub(crate) fn purge_dead_deliveries() -> String {
    format!(
        "WITH due AS (
             SELECT d.id {DEAD_DELIVERIES_DUE} LIMIT $2 FOR UPDATE OF d SKIP LOCKED
         ), attempts AS (
             DELETE FROM delivery_attempt a USING due WHERE a.delivery_id = due.id
         )
         SELECT id FROM due"
    )
}

/// Purges up to `limit` items per rule inside `tx`, which the caller
/// commits: whole events first (their bodies go with them), then bodies,
/// then dead deliveries. Returns what it purged.
pub(crate) async fn purge(
    tx: &Transaction<'_>,
    policy: &RetentionPolicy,
    now_ms: i64,
    limit: usize,
) -> Result<PurgeCounts, PgError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut purged = PurgeCounts::default();
    if let Some(cutoff) = RetentionPolicy::cutoff_ms(policy.dedup, now_ms) {
        let ids: Vec<String> = first_column(tx, &purge_events(), &[&cutoff, &limit]).await?;
        // The inbox rows last: the statement above removed what refers to them.
        tx.execute("DELETE FROM inbox WHERE id = ANY($1)", &[&ids])
            .await?;
        purged.events = ids.len() as u64;
    }
    if let Some(cutoff) = RetentionPolicy::cutoff_ms(policy.raw_payload, now_ms) {
        purged.raw_payloads = tx
            .execute(&purge_raw_payloads(), &[&cutoff, &limit])
            .await?;
    }
    if let Some(cutoff) = RetentionPolicy::cutoff_ms(policy.dead_deliveries, now_ms) {
        let ids: Vec<i64> = first_column(tx, &purge_dead_deliveries(), &[&cutoff, &limit]).await?;
        tx.execute("DELETE FROM delivery WHERE id = ANY($1)", &[&ids])
            .await?;
        purged.dead_deliveries = ids.len() as u64;
    }
    Ok(purged)
}
