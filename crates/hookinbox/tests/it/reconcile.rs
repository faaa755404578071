//! Reconciliation against the real binary: `hookinbox reconcile` finds the
//! drift each inconsistency put directly in the database is, repairs what
//! is safe with `--fix` and reports the rest; and the Stripe source, run
//! against a stand-in for `GET /v1/events` that this test serves, fills a
//! gap of 50 missed events over three pages, storing none twice — from the
//! command and from `serve`'s background pass.

use crate::support;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use support::*;

const STRIPE_SECRET: &str = "whsec_reconcile_test_000000000000";
const API_KEY: &str = "rk_test_reconcile_0123456789";
/// When the stand-in's events were created (unix seconds, in 2030): after
/// `created[gte]`, whatever the lookback.
const CREATED: i64 = 1_900_000_000;

fn hookinbox(args: &[&str], envs: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .expect("run hookinbox")
}

fn report(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// `serve` with the API key in its environment.
fn start(dir: &Path, config_path: &Path) -> Server {
    Server::start_full(dir, config_path, &[], &[("STRIPE_API_KEY", API_KEY)])
}

fn db_conn(db: &Path) -> hookinbox_store::rusqlite::Connection {
    let conn = hookinbox_store::rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_of_drift_is_found_then_repaired_or_reported() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let config = TestConfig::new(&db)
        .http_target("http://127.0.0.1:9/never", "")
        .to_string();
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, &config).unwrap();
    // Accepted without workers: each event has one PENDING delivery to `sink`.
    let server = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);
    for id in ["leased", "stale", "missing", "gone"] {
        let answer = post(&client(), &server.url("/hooks/lab"), &lab_event(id)).await;
        assert_eq!(answer.status, 200, "{id}");
    }
    drop(server);
    // The drift, made by hand: a lease that expired long ago, a delivery
    // done whose event was never finished, a delivery row that vanished,
    // and an event accepted when the endpoint also had a target `old`.
    db_conn(&db)
        .execute_batch(
            "UPDATE delivery SET status = 'LEASED', lease_owner = 'crashed', lease_until_ms = 1000
               WHERE inbox_id = (SELECT id FROM inbox WHERE provider_event_id = 'leased');
             UPDATE delivery SET status = 'DELIVERED', delivered_at_ms = 1000
               WHERE inbox_id = (SELECT id FROM inbox WHERE provider_event_id = 'stale');
             DELETE FROM delivery
               WHERE inbox_id = (SELECT id FROM inbox WHERE provider_event_id = 'missing');
             UPDATE inbox SET targets = '[\"old\",\"sink\"]' WHERE provider_event_id = 'gone';",
        )
        .unwrap();
    let config = config_path.to_str().unwrap();
    let gone_id: String = db_conn(&db)
        .query_row(
            "SELECT id FROM inbox WHERE provider_event_id = 'gone'",
            [],
            |row| row.get(0),
        )
        .unwrap();

    let looked = hookinbox(&["reconcile", "--config", config, "--json"], &[]);
    assert_eq!(looked.status.code(), Some(1), "drift left: exit 1");
    let found = report(&looked);
    assert_eq!(found["fix"], false);
    assert_eq!(
        found["expired_leases"],
        serde_json::json!({"found": 1, "repaired": 0})
    );
    assert_eq!(
        found["stale_statuses"],
        serde_json::json!({"found": 1, "repaired": 0})
    );
    assert_eq!(
        found["missing_deliveries"],
        serde_json::json!({"found": 2, "repaired": 0})
    );
    assert_eq!(
        found["unrepaired"],
        serde_json::json!([{
            "kind": "missing_delivery", "inbox_id": gone_id, "endpoint": "lab", "target": "old",
            "reason": "the endpoint no longer has this target"
        }])
    );
    assert_eq!(
        inbox_status(&db)["stale"],
        "ACCEPTED",
        "looking changes nothing"
    );

    let fixed = hookinbox(&["reconcile", "--config", config, "--fix", "--json"], &[]);
    assert_eq!(fixed.status.code(), Some(1), "`old` is still left");
    let fixed = report(&fixed);
    assert_eq!(
        fixed["expired_leases"],
        serde_json::json!({"found": 1, "repaired": 1})
    );
    assert_eq!(
        fixed["stale_statuses"],
        serde_json::json!({"found": 1, "repaired": 1})
    );
    assert_eq!(
        fixed["missing_deliveries"],
        serde_json::json!({"found": 2, "repaired": 1})
    );
    let status = inbox_status(&db);
    assert_eq!(status["stale"], "PROCESSED");
    let rows: Vec<(String, String, String)> = db_conn(&db)
        .prepare(
            "SELECT i.provider_event_id, d.target, d.status FROM delivery d
             JOIN inbox i ON i.id = d.inbox_id ORDER BY 1, 2",
        )
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let owned = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
    assert_eq!(
        rows,
        vec![
            owned("gone", "sink", "PENDING"),
            owned("leased", "sink", "PENDING"),
            owned("missing", "sink", "PENDING"),
            owned("stale", "sink", "DELIVERED"),
        ],
        "the lease is back to PENDING, the missing row added, nothing for `old`"
    );

    let again = hookinbox(&["reconcile", "--config", config], &[]);
    let text = String::from_utf8_lossy(&again.stdout);
    assert_eq!(
        text,
        format!(
            "expired_leases 0\nstale_statuses 0\nmissing_deliveries 1\n\
             unrepaired missing_delivery {gone_id} lab/old: the endpoint no longer has this target\n"
        )
    );
    let summary = String::from_utf8_lossy(&again.stderr);
    assert!(
        summary.contains(
            "expired leases 0; stale statuses 0; missing deliveries 1; 1 left as they are"
        ),
        "one summary line, no bar off a terminal: {summary}"
    );
}

/// The stand-in for Stripe's events API: `events` newest first, paged as
/// Stripe pages, answered pretty-printed (other bytes than a webhook's).
#[derive(Clone, Default)]
struct FakeStripe {
    events: Arc<Vec<serde_json::Value>>,
    /// The query of every request, in order.
    requests: Arc<Mutex<Vec<HashMap<String, String>>>>,
}

async fn list_events(
    State(stripe): State<FakeStripe>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> axum::response::Response {
    stripe.requests.lock().unwrap().push(query.clone());
    if headers.get("authorization").and_then(|v| v.to_str().ok())
        != Some(&format!("Bearer {API_KEY}"))
    {
        return (StatusCode::UNAUTHORIZED, "{\"error\":{}}").into_response();
    }
    let since: i64 = query["created[gte]"].parse().unwrap();
    let limit: usize = query["limit"].parse().unwrap();
    let listed: Vec<&serde_json::Value> = stripe
        .events
        .iter()
        .filter(|event| event["created"].as_i64().unwrap() >= since)
        .collect();
    let start = match query.get("starting_after") {
        Some(after) => {
            listed
                .iter()
                .position(|e| e["id"] == after.as_str())
                .unwrap()
                + 1
        }
        None => 0,
    };
    let page: Vec<_> = listed.iter().skip(start).take(limit).collect();
    let body = serde_json::json!({
        "object": "list",
        "url": "/v1/events",
        "has_more": start + page.len() < listed.len(),
        "data": page,
    });
    (
        [("content-type", "application/json")],
        serde_json::to_string_pretty(&body).unwrap(),
    )
        .into_response()
}

impl FakeStripe {
    /// `count` events, `evt_0` the newest, one second apart.
    async fn start(count: usize) -> (FakeStripe, String) {
        let events = (0..count)
            .map(|n| {
                serde_json::json!({
                    "id": format!("evt_{n}"),
                    "object": "event",
                    "type": "invoice.paid",
                    "created": CREATED - n as i64,
                    "data": {"object": {"id": format!("in_{n}"), "object": "invoice"}},
                })
            })
            .collect();
        let stripe = FakeStripe {
            events: Arc::new(events),
            ..FakeStripe::default()
        };
        let app = axum::Router::new()
            .route("/v1/events", axum::routing::get(list_events))
            .with_state(stripe.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (stripe, url)
    }

    /// The webhook Stripe would have sent for event `n`, signed now.
    fn webhook(&self, n: usize) -> Signed {
        let body = serde_json::to_string(&self.events[n]).unwrap();
        stripe_signed(STRIPE_SECRET, &body, now())
    }

    fn pages_asked(&self) -> Vec<Option<String>> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|query| query.get("starting_after").cloned())
            .collect()
    }
}

/// A `stripe` endpoint reconciled against `api`, 50 events a page, its
/// events delivered to `sink`.
fn stripe_config(db: &Path, api: &str, sink: &str, extra: &str) -> String {
    let lookback = "30d";
    TestConfig::new(db)
        .extra(&format!(
            r#"
[[endpoint]]
id = "stripe"
provider = "stripe"
[[endpoint.secret]]
version = "2026-11"
value = "{STRIPE_SECRET}"
[[endpoint.target]]
name = "billing"
kind = "http"
url = "{sink}"
secret = "{TARGET_SECRET}"
retry_base = "20ms"
[endpoint.reconcile]
api_key_env = "STRIPE_API_KEY"
base_url = "{api}"
lookback = "{lookback}"
page_size = 50

[delivery]
poll_interval = "50ms"
{extra}"#
        ))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_of_50_events_over_three_pages_is_filled_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let sink = Sink::start().await;
    let (stripe, api) = FakeStripe::start(120).await;
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(
        &config_path,
        stripe_config(&db, &api, &sink.url(), "[reconcile]\nenabled = false\n"),
    )
    .unwrap();
    let server = start(dir.path(), &config_path);
    let client = client();
    let url = server.url("/hooks/stripe");
    // 70 webhooks arrived: all but evt_10..evt_29, evt_50..evt_59 and
    // evt_90..evt_109 (50 missed, on each of the three pages).
    let missed: BTreeSet<usize> = (10..30).chain(50..60).chain(90..110).collect();
    assert_eq!(missed.len(), 50);
    for n in (0..120).filter(|n| !missed.contains(n)) {
        let answer = post(&client, &url, &stripe.webhook(n)).await;
        assert_eq!(answer.status, 200, "evt_{n}: {:?}", answer.body);
    }
    let config = config_path.to_str().unwrap();
    let env = [("STRIPE_API_KEY", API_KEY)];

    let looked = hookinbox(&["reconcile", "--config", config, "--json"], &env);
    assert_eq!(
        looked.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&looked.stderr)
    );
    assert_eq!(
        report(&looked)["providers"],
        serde_json::json!([{"endpoint": "stripe", "listed": 120, "ignored": 0, "unreadable": 0,
                            "missing": 50, "stored": 0}])
    );
    assert_eq!(
        stripe.pages_asked(),
        vec![None, Some("evt_49".to_owned()), Some("evt_99".to_owned())],
        "three pages, each after the last id of the one before"
    );
    assert_eq!(inbox_rows(&db).len(), 70, "looking stores nothing");

    let fixed = hookinbox(&["reconcile", "--config", config, "--fix", "--json"], &env);
    assert_eq!(
        fixed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&fixed.stderr)
    );
    assert_eq!(report(&fixed)["providers"][0]["stored"], 50);
    let again = hookinbox(&["reconcile", "--config", config, "--fix", "--json"], &env);
    assert_eq!(
        report(&again)["providers"][0],
        serde_json::json!({"endpoint": "stripe", "listed": 120, "ignored": 0, "unreadable": 0,
                           "missing": 0, "stored": 0})
    );
    let rows = inbox_rows(&db);
    assert_eq!(rows.len(), 120, "every event once");
    let ids: BTreeSet<&str> = rows.iter().map(|(_, _, id)| id.as_str()).collect();
    assert_eq!(ids.len(), 120);
    let fetched: BTreeSet<String> = db_conn(&db)
        .prepare("SELECT provider_event_id FROM inbox WHERE fetched_at_ms IS NOT NULL")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let expected: BTreeSet<String> = missed.iter().map(|n| format!("evt_{n}")).collect();
    assert_eq!(
        fetched, expected,
        "exactly the missed ones are marked as fetched"
    );

    // `events show` says so, and the body is the API's rendering of it.
    let (inbox_id, _, _) = rows.iter().find(|(_, _, id)| id == "evt_55").unwrap();
    let shown = hookinbox(
        &["events", "show", "--config", config, "--json", inbox_id],
        &env,
    );
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert!(shown["fetched_at_ms"].as_i64().is_some(), "{shown}");
    assert_eq!(shown["matched_secret_version"], "api");
    assert_eq!(shown["event_type"], "invoice.paid");
    let text = hookinbox(&["events", "show", "--config", config, inbox_id], &env);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("fetched    "), "{text}");
    let stored = hookinbox_store::SqliteReader::open(&db)
        .unwrap()
        .load_event(inbox_id)
        .unwrap()
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(stored.payload.as_ref().unwrap()).unwrap();
    assert_eq!(body, stripe.events[55]);
    assert!(
        stored.payload.as_ref().unwrap().contains(&b'\n'),
        "the API's (pretty) bytes, kept as they came"
    );

    // Its webhook arrives after all: a duplicate, not a conflict.
    let late = post(&client, &url, &stripe.webhook(55)).await;
    assert_eq!(late.status, 200, "{:?}", late.body);
    assert_eq!(late.json()["duplicate"], true);
    assert_eq!(late.json()["id"], inbox_id.as_str());

    // And the fetched events were delivered like any other.
    let delivered = eventually(Duration::from_secs(20), || {
        let ids: BTreeSet<String> = sink
            .accepted()
            .iter()
            .map(|r| r.header("x-hookinbox-event-id"))
            .collect();
        ids.len() == 120
    })
    .await;
    assert!(delivered, "{} delivered", sink.accepted().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_fills_the_gap_in_the_background_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let sink = Sink::start().await;
    let (stripe, api) = FakeStripe::start(8).await;
    let config_path = dir.path().join("hookinbox.toml");
    // The first pass runs one interval after start-up: time enough for the
    // three webhooks below to arrive first.
    let extra = "[reconcile]\ninterval = \"2s\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\n";
    std::fs::write(&config_path, stripe_config(&db, &api, &sink.url(), extra)).unwrap();
    let server = start(dir.path(), &config_path);
    let admin = server.admin_address().await;
    for n in [0, 2, 4] {
        assert_eq!(
            post(&client(), &server.url("/hooks/stripe"), &stripe.webhook(n))
                .await
                .status,
            200
        );
    }
    let filled = eventually(Duration::from_secs(20), || inbox_rows(&db).len() == 8).await;
    assert!(filled, "{:?}", inbox_rows(&db));
    let repaired = r#"hookinbox_reconcile_repaired_total{kind="provider_event"}"#;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let samples = samples(&scrape(admin).await);
        if samples.get(repaired) == Some(&5.0) {
            assert_eq!(
                samples.get(r#"hookinbox_reconcile_unrepaired{kind="provider_event"}"#),
                Some(&0.0)
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{samples:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Later passes list the same events and store nothing more.
    let passes = stripe.pages_asked().len();
    assert!(
        eventually(Duration::from_secs(10), || stripe.pages_asked().len()
            >= passes + 2)
        .await
    );
    assert_eq!(inbox_rows(&db).len(), 8);
    assert!(server.logs().contains("Reconciliation repaired drift."));
    assert!(!server.logs().contains(API_KEY), "the key is never logged");
}
