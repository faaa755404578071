//! The statements that find retention's and rewrap's candidates read
//! indexes, not whole tables: each is run through `EXPLAIN` exactly as the
//! store prepares it, with its parameters bound, on the test server.
//!
//! PostgreSQL's planner chooses by statistics, so the tables hold what a
//! real inbox would: 100,000 events, 0.5 % of them past the cutoff, most
//! of them PROCESSED with their delivery DELIVERED and its attempt logged,
//! 2 % under an older key;
//! then `ANALYZE`. All of it happens inside one transaction that is rolled
//! back (DDL is transactional), so nothing is left on the server.
//!
//! `HOOKINBOX_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); a server that cannot be
//! reached fails the test.

use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Transaction};

use super::url::PostgresUrl;
use super::{outbox, purge, rewrap, schema};

const ROWS: i64 = 100_000;
/// 0.5 % of the rows were received before it (received_at_ms = 1..=ROWS).
const CUTOFF: i64 = ROWS / 200;

async fn explain(tx: &Transaction<'_>, sql: &str, params: &[&(dyn ToSql + Sync)]) -> String {
    tx.query(&format!("EXPLAIN {sql}"), params)
        .await
        .unwrap_or_else(|e| panic!("EXPLAIN {sql}: {e}"))
        .iter()
        .map(|row| row.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts no sequential scan of the inbox, its bodies, the outbox or its
/// attempt log, and that one of `indexes` is used (`|`-separated: the
/// dedup rule may walk the inbox by status or by receipt time, whichever
/// the planner finds cheaper; both stop at the cutoff).
fn assert_indexed(what: &str, plan: &str, indexes: &str) {
    for table in ["inbox", "inbox_payload", "delivery", "delivery_attempt"] {
        assert!(
            !plan.contains(&format!("Seq Scan on {table} ")),
            "{what} scans {table}:\n{plan}"
        );
    }
    assert!(
        indexes
            .split('|')
            .any(|index| plan.contains(&format!(" using {index} "))
                || plan.contains(&format!(" on {index} "))),
        "{what} does not use {indexes}:\n{plan}"
    );
}

#[tokio::test]
async fn retention_and_rewrap_candidates_come_from_indexes() {
    let url = std::env::var("HOOKINBOX_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let config = PostgresUrl::parse(&url).unwrap().driver_config();
    let (mut client, connection) = config
        .connect(NoTls)
        .await
        .unwrap_or_else(|e| panic!("the PostgreSQL test server at {url}: {e}"));
    tokio::spawn(connection);
    let tx = client.transaction().await.unwrap();
    let schema_name = format!("hookinbox_scan_plans_{}", std::process::id());
    tx.batch_execute(&format!(
        "CREATE SCHEMA {schema_name}; SET LOCAL search_path = {schema_name}"
    ))
    .await
    .unwrap();
    for migration in schema::MIGRATIONS {
        tx.batch_execute(migration).await.unwrap();
    }
    tx.batch_execute(&format!(
        "INSERT INTO inbox (id, endpoint_id, provider, provider_event_id, received_at_ms,
                            payload_sha256, audit_headers, matched_secret_version, status,
                            payload_key_id)
         SELECT lpad(g::text, 12, '0'), 'e', 'lab', g::text, g, '\\x00', '[]', 'v1',
                CASE WHEN g % 50 = 0 THEN 'ACCEPTED' ELSE 'PROCESSED' END,
                CASE WHEN g % 50 = 1 THEN 'k1' ELSE 'k2' END
         FROM generate_series(1, {ROWS}) g;
         INSERT INTO inbox_payload (inbox_id, payload, received_at_ms)
         SELECT id, '\\x00', received_at_ms FROM inbox;
         INSERT INTO delivery (inbox_id, endpoint_id, target, generation, status, attempts,
                               next_attempt_at_ms, created_at_ms)
         SELECT id, 'e', 't', 0,
                CASE WHEN status = 'ACCEPTED' THEN 'PENDING'
                     WHEN received_at_ms % 100 = 0 THEN 'DEAD' ELSE 'DELIVERED' END,
                1, received_at_ms, received_at_ms
         FROM inbox;
         INSERT INTO delivery_attempt (delivery_id, attempt, finished_at_ms, outcome)
         SELECT id, 1, next_attempt_at_ms, status FROM delivery WHERE status <> 'PENDING';
         ANALYZE;"
    ))
    .await
    .unwrap();

    let limit: i64 = 100;
    let cap = Some(limit);
    for (what, from, index) in [
        (
            "the raw payload rule",
            purge::raw_payload_due(),
            "inbox_payload_received",
        ),
        (
            "the dedup rule",
            purge::events_due(),
            "inbox_status_received|inbox_received",
        ),
        (
            "the dead delivery rule",
            purge::DEAD_DELIVERIES_DUE.to_owned(),
            "delivery_dead",
        ),
    ] {
        // Capped, as after each batch. (Uncapped, `purge --dry-run` counts
        // every due row once; there a hash join over the few open
        // deliveries may well be the better plan, and the planner decides.)
        let counted = explain(&tx, &purge::counted(&from, "1"), &[&CUTOFF, &cap]).await;
        assert_indexed(&format!("counting {what}"), &counted, index);
    }
    for (what, sql, index) in [
        (
            "purging events",
            purge::purge_events(),
            "inbox_status_received|inbox_received",
        ),
        (
            "purging bodies",
            purge::purge_raw_payloads(),
            "inbox_payload_received",
        ),
        (
            "purging dead deliveries",
            purge::purge_dead_deliveries(),
            "delivery_dead",
        ),
    ] {
        let plan = explain(&tx, &sql, &[&CUTOFF, &limit]).await;
        assert_indexed(what, &plan, index);
    }
    let active = "k2";
    let batch = explain(&tx, &rewrap::not_under_key(), &[&active, &limit]).await;
    assert_indexed("rewrap's batch", &batch, "inbox_key_id");
    let count = explain(&tx, &rewrap::count_not_under(), &[&active]).await;
    assert_indexed("rewrap's count", &count, "inbox_key_id");

    // The check can fail: the rewrap filter as it was (`IS DISTINCT
    // FROM`) is read as a scan of the whole inbox.
    let before = explain(
        &tx,
        "SELECT id FROM inbox i WHERE i.payload_key_id IS DISTINCT FROM $1",
        &[&active],
    )
    .await;
    assert!(before.contains("Seq Scan on inbox "), "{before}");

    // The outbox during a drain: after the statistics were taken (an
    // inbox where hardly anything is LEASED), 5,000 deliveries are leased
    // — entries the partial indexes keep after the rows move on, which the
    // statistics do not see.
    tx.batch_execute(
        "UPDATE delivery SET status = 'LEASED', lease_owner = 'w', lease_until_ms = 1
         WHERE id IN (SELECT id FROM delivery WHERE status = 'DELIVERED' ORDER BY id LIMIT 5000)",
    )
    .await
    .unwrap();
    let leased: Vec<i64> = tx
        .query(
            "SELECT id FROM delivery WHERE status = 'LEASED' ORDER BY id LIMIT 64",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let n = leased.len();
    let owners = vec!["w"; n];
    let statuses = vec!["DELIVERED"; n];
    let times = vec![2_i64; n];
    let errors: Vec<Option<&str>> = vec![None; n];
    let delivered_at: Vec<Option<i64>> = vec![Some(2); n];
    let settle_params: [&(dyn ToSql + Sync); 7] = [
        &leased,
        &owners,
        &statuses,
        &times,
        &errors,
        &delivered_at,
        &times,
    ];
    let settle = explain(&tx, outbox::SETTLE, &settle_params).await;
    assert_by_id("a settlement", &settle, "delivery_pkey");
    let owner = "w";
    let until: i64 = 3;
    let lease = explain(&tx, outbox::LEASE_WITH_EVENTS, &[&leased, &owner, &until]).await;
    assert_by_id("a lease", &lease, "delivery_pkey");
    let inbox_ids: Vec<String> = (1..=64).map(|g| format!("{g:012}")).collect();
    let finish = explain(&tx, outbox::FINISH_INBOXES, &[&inbox_ids]).await;
    assert_by_id("finishing events", &finish, "inbox_pkey");

    // Due deliveries come from `delivery_due` in its order, the scan
    // stopping at the limit, never a sort of the whole backlog.
    let (endpoint, target, now, wanted) = ("e", "t", ROWS, 64_i64);
    let due = explain(
        &tx,
        outbox::SELECT_DUE,
        &[&endpoint, &target, &now, &wanted],
    )
    .await;
    assert_indexed("the lease's look for due rows", &due, "delivery_due");
    assert!(!due.contains("Sort"), "the lease sorts the backlog:\n{due}");
    // A paused target's rows are not read: the pause is a one-time filter
    // above the scan (see `target_gates`).
    assert!(
        due.contains("One-Time Filter"),
        "the pause is tested per row:\n{due}"
    );

    // The check can fail: the settlement with its status compared as a
    // constant takes the partial index of LEASED rows.
    let constant = outbox::SETTLE.replace("d.status || '' = 'LEASED'", "d.status = 'LEASED'");
    assert_ne!(constant, outbox::SETTLE);
    let before = explain(&tx, &constant, &settle_params).await;
    assert!(before.contains("delivery_leased"), "{before}");
    tx.rollback().await.unwrap();
}

/// Asserts that a statement that names its rows by id finds them through
/// `index` and walks none of the partial indexes on a state (see
/// `outbox`'s module doc, "Rows by id, not by state").
fn assert_by_id(what: &str, plan: &str, index: &str) {
    assert_indexed(what, plan, index);
    for partial in [
        "delivery_due",
        "delivery_leased",
        "delivery_dead",
        "inbox_status_received",
    ] {
        assert!(!plan.contains(partial), "{what} walks {partial}:\n{plan}");
    }
}
