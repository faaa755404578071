//! Retention on PostgreSQL (`PostgresStore::purge_batch`, see
//! `crate::retention` for the rules): one short transaction removes up to
//! a limit of rows per rule. The inbox rows are taken `FOR UPDATE SKIP
//! LOCKED`: a row a worker is settling right now is left for a later
//! batch instead of waited for, and a replay that reopens an event first
//! keeps it (its new PENDING delivery then rules it out).
//!
//! The candidates are found by scans, like SQLite's; partitioning the
//! inbox by received time is the plan for large ones (DESIGN.md §9).

use deadpool_postgres::{GenericClient, Transaction};

use super::db_error::PgError;
use super::first_column::first_column;
use crate::{PurgeCounts, RetentionPolicy};

/// An event with a delivery that a worker is about to need.
const NO_OPEN_DELIVERY: &str = "NOT EXISTS (
    SELECT 1 FROM delivery d WHERE d.inbox_id = i.id AND d.status IN ('PENDING', 'LEASED'))";

fn raw_payload_due() -> String {
    format!(
        "FROM inbox i
         WHERE i.received_at_ms < $1
           AND EXISTS (SELECT 1 FROM inbox_payload p WHERE p.inbox_id = i.id)
           AND {NO_OPEN_DELIVERY}"
    )
}

fn events_due() -> String {
    format!("FROM inbox i WHERE i.received_at_ms < $1 AND {NO_OPEN_DELIVERY}")
}

/// A DEAD delivery's next_attempt_at_ms is when it died (`settle_many`).
const DEAD_DELIVERIES_DUE: &str =
    "FROM delivery d WHERE d.status = 'DEAD' AND d.next_attempt_at_ms < $1";

/// What is due under `policy` at `now_ms`.
pub(crate) async fn preview(
    client: &impl GenericClient,
    policy: &RetentionPolicy,
    now_ms: i64,
) -> Result<PurgeCounts, PgError> {
    async fn count(
        client: &impl GenericClient,
        from: String,
        cutoff: Option<i64>,
    ) -> Result<u64, PgError> {
        let Some(cutoff) = cutoff else {
            return Ok(0);
        };
        let statement = client
            .prepare_cached(&format!("SELECT count(*) {from}"))
            .await?;
        let count: i64 = client.query_one(&statement, &[&cutoff]).await?.try_get(0)?;
        Ok(u64::try_from(count).unwrap_or(0))
    }
    Ok(PurgeCounts {
        raw_payloads: count(
            client,
            raw_payload_due(),
            RetentionPolicy::cutoff_ms(policy.raw_payload, now_ms),
        )
        .await?,
        events: count(
            client,
            events_due(),
            RetentionPolicy::cutoff_ms(policy.dedup, now_ms),
        )
        .await?,
        dead_deliveries: count(
            client,
            DEAD_DELIVERIES_DUE.to_owned(),
            RetentionPolicy::cutoff_ms(policy.dead_deliveries, now_ms),
        )
        .await?,
    })
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
        let sql = format!(
            "WITH due AS (
                 SELECT i.id {} ORDER BY i.id LIMIT $2 FOR UPDATE OF i SKIP LOCKED
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
        );
        let ids: Vec<String> = first_column(tx, &sql, &[&cutoff, &limit]).await?;
        // The inbox rows last: the statement above removed what refers to them.
        tx.execute("DELETE FROM inbox WHERE id = ANY($1)", &[&ids])
            .await?;
        purged.events = ids.len() as u64;
    }
    if let Some(cutoff) = RetentionPolicy::cutoff_ms(policy.raw_payload, now_ms) {
        // The audit headers go too; what is left of them is plain, so the
        // row names no key.
        let sql = format!(
            "WITH due AS (
                 SELECT i.id {} ORDER BY i.id LIMIT $2 FOR UPDATE OF i SKIP LOCKED
             ), rows AS (
                 UPDATE inbox i SET audit_headers = '[]', payload_key_id = NULL
                 FROM due WHERE i.id = due.id
             )
             DELETE FROM inbox_payload p USING due WHERE p.inbox_id = due.id",
            raw_payload_due()
        );
        purged.raw_payloads = tx.execute(&sql, &[&cutoff, &limit]).await?;
    }
    if let Some(cutoff) = RetentionPolicy::cutoff_ms(policy.dead_deliveries, now_ms) {
        let sql = format!(
            "WITH due AS (
                 SELECT d.id {DEAD_DELIVERIES_DUE} ORDER BY d.id LIMIT $2 FOR UPDATE OF d SKIP LOCKED
             ), attempts AS (
                 DELETE FROM delivery_attempt a USING due WHERE a.delivery_id = due.id
             )
             SELECT id FROM due"
        );
        let ids: Vec<i64> = first_column(tx, &sql, &[&cutoff, &limit]).await?;
        tx.execute("DELETE FROM delivery WHERE id = ANY($1)", &[&ids])
            .await?;
        purged.dead_deliveries = ids.len() as u64;
    }
    Ok(purged)
}
