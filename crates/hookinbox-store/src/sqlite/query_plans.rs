//! The statements operators' pages run, checked against SQLite's query
//! planner: each one searches an index (or walks one in list order, which
//! `LIMIT` stops), never the whole table, and sorts nothing but the rows an
//! index lookup found. A statement that lost its index would still give the
//! right answer in every other test, only slowly on a large inbox.

use std::cell::RefCell;

use rusqlite::trace::{TraceEvent, TraceEventCodes};
use rusqlite::Connection;

use super::schema;
use crate::event_query::{self, Dialect};
use crate::{EventCursor, EventFilter, InboxStatus, OverviewQuery};

thread_local! {
    static TRACED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn migrated() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    schema::migrate(&mut conn).unwrap();
    conn
}

/// The plan's lines, `EXPLAIN QUERY PLAN` of `sql` (placeholders unbound).
fn plan(conn: &Connection, sql: &str) -> Vec<String> {
    let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let mut rows = statement.raw_query();
    let mut steps = Vec::new();
    while let Some(row) = rows.next().unwrap() {
        steps.push(row.get::<_, String>(3).unwrap());
    }
    steps
}

/// Panics with the plan when a step reads a whole table.
fn assert_indexed(conn: &Connection, sql: &str) {
    let plan = plan(conn, sql);
    let looked_up = plan.iter().any(|step| step.starts_with("SEARCH"));
    for step in &plan {
        // `SCAN inbox` (or its alias): every row; a scan of a subquery's
        // or a CTE's few rows is fine, and so is one of an index.
        let full_scan = ["inbox", "delivery", "delivery_attempt", "i", "d"]
            .iter()
            .any(|table| *step == format!("SCAN {table}"));
        // Sorting the rows of an index lookup (a provider event id) is
        // cheap; sorting a scan is reading the whole of it first.
        let full_sort = step == "USE TEMP B-TREE FOR ORDER BY" && !looked_up;
        assert!(!full_scan && !full_sort, "{sql}\n{plan:#?}");
    }
}

#[test]
fn every_list_filter_reads_an_index() {
    let conn = migrated();
    let cursor = EventCursor {
        received_at_ms: 5,
        id: "0193f1c2-7a4e-7000-8000-000000000001".into(),
    };
    let filters = [
        EventFilter::default(),
        EventFilter {
            status: Some(InboxStatus::Failed),
            ..EventFilter::default()
        },
        EventFilter {
            status: Some(InboxStatus::Processed),
            endpoint_id: Some("e".into()),
            ..EventFilter::default()
        },
        EventFilter {
            event_type: Some("t".into()),
            endpoint_id: Some("e".into()),
            ..EventFilter::default()
        },
        EventFilter {
            endpoint_id: Some("e".into()),
            received_from_ms: Some(1),
            received_before_ms: Some(9),
            ..EventFilter::default()
        },
        EventFilter {
            received_from_ms: Some(1),
            cursor: Some(cursor.clone()),
            ..EventFilter::default()
        },
        EventFilter {
            provider_event_id: Some("evt_1".into()),
            ..EventFilter::default()
        },
        EventFilter {
            provider_event_id: Some("evt_1".into()),
            endpoint_id: Some("e".into()),
            status: Some(InboxStatus::Failed),
            cursor: Some(cursor),
            ..EventFilter::default()
        },
    ];
    for filter in &filters {
        let statement = event_query::list_events(filter, Dialect::Sqlite);
        assert_indexed(&conn, &statement.sql);
        // The driving index is one that ends in the list's order.
        if filter.provider_event_id.is_none() {
            let plan = plan(&conn, &statement.sql).join("\n");
            assert!(
                !plan.contains("TEMP B-TREE FOR ORDER BY")
                    || plan.contains("RIGHT PART OF ORDER BY"),
                "{filter:?}\n{plan}"
            );
        }
    }
}

fn trace(event: TraceEvent<'_>) {
    if let TraceEvent::Stmt(_, sql) = event {
        TRACED.with(|traced| traced.borrow_mut().push(sql.to_owned()));
    }
}

#[test]
fn every_overview_count_reads_an_index() {
    let conn = migrated();
    conn.trace_v2(TraceEventCodes::SQLITE_TRACE_STMT, Some(trace));
    let query = OverviewQuery {
        now_ms: 100,
        endpoints: vec!["e".into()],
        targets: vec![("e".into(), "t".into())],
    };
    super::overview::overview(&conn, &query).unwrap();
    conn.trace_v2(TraceEventCodes::empty(), None);
    let statements = TRACED.with(|traced| traced.take());
    assert!(statements.len() >= 8, "{statements:#?}");
    for sql in statements {
        assert_indexed(&conn, &sql);
    }
}

#[test]
fn the_event_stream_reads_an_index_in_its_order() {
    let conn = migrated();
    for sql in [
        super::stream::LAST_POSITION,
        super::stream::FIRST_POSITION_SINCE,
        super::stream::EVENTS_AFTER,
    ] {
        assert_indexed(&conn, sql);
        let plan = plan(&conn, sql).join("\n");
        assert!(!plan.contains("TEMP B-TREE"), "{sql}\n{plan}");
    }
    let accept = plan(&conn, super::accept::INSERT_INBOX_FOR_PLANS).join("\n");
    assert!(
        accept.contains("inbox_stream"),
        "the next place is an index lookup: {accept}"
    );
}
