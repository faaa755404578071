//! `/metrics` against the real binary: every ingress outcome and every
//! rejection reason of docs/architecture.md §2 driven once (or a known number of
//! times), a retried and a dead delivery, then the exact value of every
//! series that says so — the counters, the gauges the sampler reads from
//! the database, the end-to-end latency histogram's count, build info and
//! the secret versions' expiry. A second server, without workers, fills
//! its commit queue to show the 503s that a full queue counts.

use crate::support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use support::*;

/// The `expired` endpoint's only secret version retired at this unix
/// second: every request to it is answered 503 (no active secret).
const RETIRED_AT: i64 = 1_600_000_000;

fn config_text(db: &std::path::Path, sink: &str) -> String {
    TestConfig::new(db)
        .http_target(sink, "max_attempts = 2")
        .endpoint("small", "lab", "max_body_bytes = 64", LAB_SECRET)
        .endpoint(
            "limited",
            "lab",
            "rate_limit = { per_second = 1, burst = 1 }",
            LAB_SECRET,
        )
        .endpoint("typed", "lab", "event_types = [\"keep.*\"]", LAB_SECRET)
        .extra(&format!(
            r#"
[[endpoint]]
id = "expired"
provider = "lab"
[[endpoint.secret]]
version = "v1"
value = "{LAB_SECRET}"
not_after = {RETIRED_AT}

[server]
body_rate_grace = "300ms"
min_body_bytes_per_second = 1000

[admin]
listen = "127.0.0.1:0"

[metrics]
sample_interval = "100ms"
count_interval = "100ms"

[reconcile]
enabled = false
"#
        ))
        .to_string()
}

/// Sends a head promising 1,000 bytes, ten of them, then nothing: the
/// pace rule answers 408 `timeout`.
fn stalled_body(addr: SocketAddr) -> u16 {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(
            b"POST /hooks/lab HTTP/1.1\r\nHost: hookinbox\r\nContent-Type: application/json\r\n\
              Content-Length: 1000\r\n\r\n{\"id\":\"sl",
        )
        .unwrap();
    let mut answer = [0u8; 12];
    stream.read_exact(&mut answer).unwrap();
    String::from_utf8_lossy(&answer[9..12]).parse().unwrap()
}

/// The ingress counter's series for one endpoint, outcome and reason.
fn ingress(endpoint: &str, outcome: &str, reason: &str) -> String {
    format!(
        r#"hookinbox_ingress_requests_total{{endpoint="{endpoint}",outcome="{outcome}",reason="{reason}"}}"#
    )
}

fn delivery_series(name: &str, extra: &str) -> String {
    format!(r#"{name}{{endpoint="lab",target="sink"{extra}}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_outcome_and_reason_is_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let sink = Sink::start().await;
    // `retry-me` fails once, then goes; `kill-me` always fails (two
    // attempts: one retry, then dead); everything else goes at once.
    let mut retried = false;
    sink.respond_with(
        move |_, request| match request.header("x-hookinbox-event-id").as_str() {
            "retry-me" if !retried => {
                retried = true;
                (503, vec![])
            }
            "kill-me" => (500, vec![]),
            _ => (200, vec![]),
        },
    );
    let server = Server::start(dir.path(), &config_text(&db, &sink.url()));
    let admin = server.admin_address().await;
    let client = client();
    let url = |endpoint: &str| server.url(&format!("/hooks/{endpoint}"));
    let status = |answer: Answer| answer.status;

    for id in ["ok-1", "retry-me", "kill-me"] {
        assert_eq!(
            status(post(&client, &url("lab"), &lab_event(id)).await),
            200
        );
    }
    assert_eq!(
        status(post(&client, &url("lab"), &lab_event("ok-1")).await),
        200,
        "duplicate"
    );
    let conflict = lab_signed(
        r#"{"id":"ok-1","type":"payment.succeeded","amount":2}"#,
        now(),
    );
    assert_eq!(status(post(&client, &url("lab"), &conflict).await), 409);

    let event = lab_event("refused");
    let refusals: Vec<(&str, Signed, u16)> = vec![
        (
            "missing_signature",
            event.clone().without("x-signature"),
            401,
        ),
        (
            "malformed_signature",
            event.clone().with("x-signature", "zz"),
            401,
        ),
        (
            "signature",
            event.clone().with("x-signature", &"00".repeat(32)),
            401,
        ),
        (
            "timestamp",
            lab_signed(r#"{"id":"old"}"#, now() - 3_600),
            401,
        ),
        (
            "missing_event_id",
            lab_signed(r#"{"type":"x"}"#, now()),
            400,
        ),
        ("malformed_body", lab_signed("not json", now()), 400),
        (
            "content_type",
            event.clone().with("content-type", "text/plain"),
            415,
        ),
    ];
    for (reason, signed, expected) in refusals {
        let answer = post(&client, &url("lab"), &signed).await;
        assert_eq!(
            (answer.status, answer.error()),
            (expected, reason.to_owned())
        );
    }
    let get = send(&client, "GET", &url("lab"), &event).await.unwrap();
    assert_eq!((get.status, get.error()), (405, "method".to_owned()));
    let unknown = post(&client, &url("nope"), &event).await;
    assert_eq!(
        (unknown.status, unknown.error()),
        (404, "not_found".to_owned())
    );
    let big = lab_signed(
        format!(r#"{{"id":"big","pad":"{}"}}"#, "x".repeat(100)),
        now(),
    );
    let too_large = post(&client, &url("small"), &big).await;
    assert_eq!(
        (too_large.status, too_large.error()),
        (413, "too_large".to_owned())
    );
    let addr = server.addr;
    assert_eq!(
        tokio::task::spawn_blocking(move || stalled_body(addr))
            .await
            .unwrap(),
        408
    );
    assert_eq!(
        status(post(&client, &url("limited"), &lab_event("l-1")).await),
        200
    );
    let limited = post(&client, &url("limited"), &lab_event("l-2")).await;
    assert_eq!(
        (limited.status, limited.error()),
        (429, "rate_limited".to_owned())
    );
    let expired = post(&client, &url("expired"), &lab_event("x-1")).await;
    assert_eq!(
        (expired.status, expired.error()),
        (503, "unavailable".to_owned())
    );
    let ignored = post(
        &client,
        &url("typed"),
        &lab_signed(r#"{"id":"t-1","type":"drop.me"}"#, now()),
    )
    .await;
    assert_eq!(
        (ignored.status, ignored.json()["ignored"].clone()),
        (200, true.into())
    );

    // Deliveries: ok-1 and retry-me delivered (retry-me on its second
    // attempt), kill-me dead after two; the sampler has seen the end state.
    let expected: BTreeMap<String, f64> = [
        (
            delivery_series("hookinbox_deliveries_total", r#",outcome="delivered""#),
            2.0,
        ),
        (
            delivery_series("hookinbox_deliveries_total", r#",outcome="retry""#),
            2.0,
        ),
        (
            delivery_series("hookinbox_deliveries_total", r#",outcome="dead""#),
            1.0,
        ),
        (
            delivery_series("hookinbox_receive_to_delivered_seconds_count", ""),
            2.0,
        ),
        (delivery_series("hookinbox_delivery_backlog", ""), 0.0),
        (
            delivery_series("hookinbox_oldest_due_delivery_age_seconds", ""),
            0.0,
        ),
        (
            r#"hookinbox_oldest_unprocessed_age_seconds{endpoint="lab"}"#.into(),
            0.0,
        ),
        (r#"hookinbox_inbox_rows{status="ACCEPTED"}"#.into(), 0.0),
        (r#"hookinbox_inbox_rows{status="FAILED"}"#.into(), 1.0),
        // ok-1, retry-me, and limited's l-1 (no targets: processed at once).
        (r#"hookinbox_inbox_rows{status="PROCESSED"}"#.into(), 3.0),
    ]
    .into_iter()
    .collect();
    let (settled, seen) = scrape_until(admin, |seen| {
        expected
            .iter()
            .all(|(series, value)| seen.get(series) == Some(value))
    })
    .await;
    let differing: Vec<_> = expected
        .iter()
        .filter(|(series, value)| seen.get(*series) != Some(*value))
        .map(|(series, value)| format!("{series}: expected {value}, got {:?}", seen.get(series)))
        .collect();
    assert!(settled, "{differing:#?}");

    let text = scrape(admin).await;
    let samples = samples(&text);
    let exactly = |series: String, value: f64| {
        assert_eq!(samples.get(&series), Some(&value), "{series} in:\n{text}");
    };
    exactly(ingress("lab", "accepted", ""), 3.0);
    exactly(ingress("lab", "duplicate", ""), 1.0);
    exactly(ingress("lab", "rejected", "conflict"), 1.0);
    for reason in [
        "missing_signature",
        "malformed_signature",
        "signature",
        "timestamp",
        "missing_event_id",
        "malformed_body",
        "content_type",
        "method",
        "timeout",
    ] {
        exactly(ingress("lab", "rejected", reason), 1.0);
    }
    exactly(ingress("_unknown", "rejected", "not_found"), 1.0);
    exactly(ingress("small", "rejected", "too_large"), 1.0);
    exactly(ingress("limited", "accepted", ""), 1.0);
    exactly(ingress("limited", "rejected", "rate_limited"), 1.0);
    exactly(ingress("expired", "rejected", "unavailable"), 1.0);
    exactly(ingress("typed", "ignored", "unsupported_type"), 1.0);
    // Every request was answered: nothing else was counted.
    let requests: f64 = samples
        .iter()
        .filter(|(series, _)| series.starts_with("hookinbox_ingress_requests_total{"))
        .map(|(_, value)| value)
        .sum();
    assert_eq!(requests, 20.0, "{text}");
    // Verified by lab's v1: three events, the duplicate and the conflict
    // (a body without an id, or not JSON, fails inside verification).
    exactly(
        r#"hookinbox_secret_version_matches_total{endpoint="lab",version="v1"}"#.into(),
        5.0,
    );
    exactly(
        r#"hookinbox_secret_version_matches_total{endpoint="limited",version="v1"}"#.into(),
        1.0,
    );
    exactly(
        r#"hookinbox_secret_version_matches_total{endpoint="typed",version="v1"}"#.into(),
        1.0,
    );
    exactly(
        r#"hookinbox_secret_version_expiry_timestamp_seconds{endpoint="expired",version="v1"}"#
            .into(),
        RETIRED_AT as f64,
    );
    exactly(
        r#"hookinbox_secret_version_expiry_timestamp_seconds{endpoint="lab",version="v1"}"#.into(),
        f64::INFINITY,
    );
    exactly(
        r#"hookinbox_oldest_unprocessed_age_seconds{endpoint="typed"}"#.into(),
        0.0,
    );
    // Workers still lease and settle (the failing delivery retries), so a
    // scrape can catch one of their writes queued: the queue must drain.
    let (drained, seen) = scrape_until(admin, |seen| {
        seen.get("hookinbox_commit_queue_depth") == Some(&0.0)
    })
    .await;
    assert!(
        drained,
        "commit queue depth: {:?}",
        seen.get("hookinbox_commit_queue_depth")
    );
    exactly("hookinbox_inflight_body_bytes".into(), 0.0);
    let build = samples
        .iter()
        .find(|(series, _)| series.starts_with("hookinbox_build_info{"))
        .unwrap_or_else(|| panic!("no build info in:\n{text}"));
    assert!(build
        .0
        .contains(&format!(r#"version="{}""#, env!("CARGO_PKG_VERSION"))));
    assert_eq!(*build.1, 1.0);
    assert!(
        samples.contains_key(r#"hookinbox_open_connections{listener="admin"}"#),
        "{text}"
    );
    // No secret and no unknown endpoint id in the labels.
    assert!(!text.contains(LAB_SECRET));
    assert!(!text.contains("nope"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_commit_queue_is_counted_apart_from_other_503s() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let stall = dir.path().join("stall");
    // One place in the queue, commits held while the stall file exists; no
    // workers, no reconciliation, readiness not checked for an hour:
    // nothing but these requests writes.
    let config = TestConfig::new(&db)
        .storage("queue_capacity = 1")
        .storage("commit_timeout = \"300ms\"")
        .extra(
            "[admin]\nlisten = \"127.0.0.1:0\"\n\n[reconcile]\nenabled = false\n\n\
             [metrics]\nsample_interval = \"1h\"\n",
        )
        .to_string();
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, config).unwrap();
    let failpoint = format!("stall_commit:{}", stall.display());
    let server = Server::start_full(
        dir.path(),
        &config_path,
        &["--no-workers"],
        &[("HOOKINBOX_FAILPOINT", &failpoint)],
    );
    let admin = server.admin_address().await;
    let client = client();
    let url = server.url("/hooks/lab");
    std::fs::write(&stall, b"").unwrap();
    // The first waits in a batch held before its COMMIT, the second in the
    // queue's one place; both time out. The third finds the queue full.
    for id in ["in-the-batch", "in-the-queue"] {
        assert_eq!(
            post(&client, &url, &lab_event(id)).await.status,
            503,
            "{id}"
        );
    }
    let full = post(&client, &url, &lab_event("queue-full")).await;
    assert_eq!((full.status, full.error()), (503, "unavailable".to_owned()));
    let text = scrape(admin).await;
    let samples = samples(&text);
    assert_eq!(
        samples.get(r#"hookinbox_commit_queue_full_total{endpoint="lab"}"#),
        Some(&1.0),
        "{text}"
    );
    assert_eq!(
        samples.get(r#"hookinbox_commit_timeouts_total{endpoint="lab"}"#),
        Some(&2.0)
    );
    assert_eq!(
        samples.get(&ingress("lab", "rejected", "unavailable")),
        Some(&3.0)
    );
    // The queued op still waits: the writer took the first into its batch.
    assert_eq!(
        samples.get("hookinbox_commit_queue_depth"),
        Some(&1.0),
        "{text}"
    );
    std::fs::remove_file(&stall).unwrap();
    let (drained, _) = scrape_until(admin, |seen| {
        seen.get("hookinbox_commit_queue_depth") == Some(&0.0)
    })
    .await;
    assert!(drained, "the queue drains once commits go again");
}

/// Scrapes `/metrics` every 50 ms until `done` holds for its samples (or
/// 20 s pass); whether it did, and the last samples.
async fn scrape_until(
    admin: SocketAddr,
    done: impl Fn(&BTreeMap<String, f64>) -> bool,
) -> (bool, BTreeMap<String, f64>) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let seen = samples(&scrape(admin).await);
        if done(&seen) {
            return (true, seen);
        }
        if std::time::Instant::now() > deadline {
            return (false, seen);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
