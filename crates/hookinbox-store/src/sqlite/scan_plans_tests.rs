//! The statements that find retention's and rewrap's candidates read
//! indexes, not whole tables: each is run through `EXPLAIN QUERY PLAN`
//! exactly as the store prepares it, on a database at the current schema
//! without `ANALYZE` statistics (the store never gathers any, so this is
//! the plan it runs).
//!
//! SQLite writes `SCAN t` for a full scan (`SCAN t USING INDEX x` is a
//! full scan of an index, no better) and `SEARCH t USING INDEX x (…)` for a
//! range or a lookup. Every line naming one of the big tables must be a
//! `SEARCH`. The one scan allowed is of `inbox_payload` (alias `p`) in the
//! raw payload rule: since the payload log (schema 4) that table holds only
//! rows from before it, and no new row ever enters it.

use rusqlite::Connection;

use super::{purge, rewrap, schema};

/// The plan's detail lines.
fn plan(conn: &Connection, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Vec<String> {
    conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap()
        .query_map(params, |row| row.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Asserts no full scan of the inbox or the outbox, and that `index` is
/// searched.
fn assert_indexed(what: &str, plan: &[String], index: &str) {
    let text = plan.join("\n");
    for line in plan {
        let scans_big_table = ["SCAN i", "SCAN d", "SCAN inbox", "SCAN delivery"]
            .iter()
            .any(|scan| line == scan || line.starts_with(&format!("{scan} ")));
        assert!(!scans_big_table, "{what} scans a table:\n{text}");
    }
    assert!(
        plan.iter()
            .any(|line| line.starts_with("SEARCH") && line.contains(&format!("INDEX {index} "))),
        "{what} does not search {index}:\n{text}"
    );
}

fn database() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    schema::migrate(&mut conn).unwrap();
    conn
}

#[test]
fn purge_candidates_come_from_indexes() {
    let conn = database();
    let (cutoff, limit) = (1_000_i64, 100_i64);
    for (what, due, index) in [
        (
            "the raw payload rule",
            purge::raw_payload_due(),
            "inbox_body_received",
        ),
        (
            "the dedup rule",
            purge::events_due(),
            "inbox_status_received",
        ),
        (
            "the dead delivery rule",
            purge::DEAD_DELIVERIES_DUE.to_owned(),
            "delivery_dead",
        ),
    ] {
        let batch = plan(&conn, &purge::limited(&due), &[&cutoff, &limit]);
        assert_indexed(what, &batch, index);
        let count = plan(&conn, &purge::counted(&due), &[&cutoff, &limit]);
        assert_indexed(&format!("counting {what}"), &count, index);
        if what != "the dead delivery rule" {
            // The open-delivery check is a lookup per candidate.
            assert_indexed(
                &format!("{what}'s delivery check"),
                &batch,
                "delivery_inbox",
            );
        }
    }
    let segment = plan(&conn, purge::SEGMENT_REFERENCED, &[&7_i64]);
    assert_indexed("the segment check", &segment, "inbox_body_segment");
}

#[test]
fn rewrap_candidates_come_from_the_key_index() {
    let conn = database();
    let limit = 100_i64;
    let batch = plan(&conn, &rewrap::not_under_key(), &[&"k2", &limit]);
    assert_indexed("rewrap's batch", &batch, "inbox_key_id");
    let count = plan(&conn, &rewrap::count_not_under(), &[&"k2"]);
    assert_indexed("rewrap's count", &count, "inbox_key_id");
}

/// The check above can fail: a statement on a column without an index
/// (and `<>` for the key) is read as a full scan.
#[test]
fn a_statement_without_an_index_is_seen_as_a_scan() {
    let conn = database();
    let before = plan(
        &conn,
        "SELECT id FROM inbox i WHERE i.provider_created_at < ?1 LIMIT ?2",
        &[&1_i64, &1_i64],
    );
    assert!(before.iter().any(|line| line == "SCAN i"), "{before:?}");
    let not_equal = plan(
        &conn,
        "SELECT id FROM inbox i WHERE i.payload_key_id <> ?1",
        &[&"k"],
    );
    assert!(
        not_equal.iter().any(|line| line.starts_with("SCAN i")),
        "{not_equal:?}"
    );
}
