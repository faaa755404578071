//! Flow control per target (docs/delivery.md, "Flow control"), through the
//! real binary: a paused target receives nothing while another target of
//! the same endpoint drains, then everything in per-object order once
//! resumed, with no attempt spent; a `delay` holds the first attempt back
//! and keeps the order; a breaker opens after its failures, lets at most
//! one probe through per `open_for`, closes on the first success and lets
//! nothing go DEAD; a `rate_limit` holds across two `work` processes on
//! PostgreSQL. Pause and circuit state live in the database, so the
//! scenarios that use them run on both backends.

use crate::support;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::*;

on_both_backends!(
    a_paused_target_receives_nothing_then_everything_in_order,
    a_delayed_target_is_not_sent_before_its_delay_and_keeps_the_order,
    an_open_breaker_lets_one_probe_per_open_for_and_closes_on_success,
);

fn hookinbox(args: &[&str], config: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .expect("run hookinbox")
}

/// An endpoint `ordered` whose events carry an object id and version, and
/// fast polling; its targets follow as `extra` tables.
fn ordered_endpoint(storage: &Storage) -> TestConfig {
    storage
        .config()
        .extra(
            r#"[delivery]
poll_interval = "50ms"
lease = "2s"
rescue_interval = "200ms"
"#,
        )
        .extra("[admin]\nlisten = \"127.0.0.1:0\"\n")
        .extra("[metrics]\nsample_interval = \"100ms\"\n")
        .endpoint(
            "ordered",
            "lab",
            "object_id = \"/object_id\"\nobject_version = \"/object_version\"",
            LAB_SECRET,
        )
}

/// An http target retried every few tens of milliseconds, 1000 times
/// unless `settings` says otherwise.
fn http_target(name: &str, url: &str, settings: &str) -> String {
    let max_attempts = if settings.contains("max_attempts") {
        ""
    } else {
        "max_attempts = 1000"
    };
    format!(
        r#"
[[endpoint.target]]
name = "{name}"
kind = "http"
url = "{url}"
secret = "{TARGET_SECRET}"
retry_base = "20ms"
retry_cap = "50ms"
{max_attempts}
{settings}"#
    )
}

/// `objects` × `versions` events, posted version by version.
async fn post_ordered(server: &Server, objects: usize, versions: usize, prefix: &str) {
    let client = client();
    let url = server.url("/hooks/ordered");
    for version in 1..=versions {
        for object in 0..objects {
            let body = format!(
                r#"{{"id":"{prefix}_{object}_{version}","type":"thing.updated","object_id":"obj_{object}","object_version":{version}}}"#
            );
            let answer = post(&client, &url, &lab_signed(body, now())).await;
            assert_eq!(
                answer.status,
                200,
                "{}",
                String::from_utf8_lossy(&answer.body)
            );
        }
    }
}

/// The (object, version) of each request the sink answered 2xx, in order.
fn delivered_versions(sink: &Sink) -> Vec<(String, i64)> {
    sink.accepted()
        .iter()
        .map(|r| {
            let body: serde_json::Value = serde_json::from_slice(&r.body).expect("a JSON body");
            (
                body["object_id"].as_str().expect("object_id").to_owned(),
                body["object_version"].as_i64().expect("object_version"),
            )
        })
        .collect()
}

/// Each object's versions arrived strictly rising.
fn assert_in_order(delivered: &[(String, i64)]) {
    let mut last: HashMap<&str, i64> = HashMap::new();
    for (object, version) in delivered {
        let previous = last.insert(object, *version);
        assert!(
            previous.is_none_or(|previous| previous < *version),
            "{object}: version {version} after {previous:?}: {delivered:?}"
        );
    }
}

/// Every delivery row of `target`: (status, attempts).
async fn rows_of(storage: &Storage, target: &str) -> Vec<(String, i64)> {
    let reads = storage.reads().await;
    let mut rows = Vec::new();
    for event in storage.events().await {
        let (detail, _) = reads
            .show_event(&event.id, false)
            .await
            .expect("show the event")
            .expect("a listed event exists");
        rows.extend(
            detail
                .deliveries
                .into_iter()
                .filter(|d| d.target == target)
                .map(|d| (d.status, d.attempts)),
        );
    }
    rows
}

fn target_state(config: &Path, target: &str) -> String {
    let out = hookinbox(&["targets", "list", "--json"], config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    rows.as_array()
        .expect("an array")
        .iter()
        .find(|row| row["target"] == target)
        .map(|row| row["state"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_else(|| panic!("no row for {target}: {rows}"))
}

/// Posts ordered events — `objects` objects, each version in turn — one
/// every `every`, for `lasting`; how many it posted.
async fn post_ordered_for(
    server: &Server,
    objects: usize,
    every: Duration,
    lasting: Duration,
    prefix: &str,
) -> usize {
    let client = client();
    let url = server.url("/hooks/ordered");
    let started = Instant::now();
    let mut ticks = tokio::time::interval(every);
    let mut posted = 0;
    while started.elapsed() < lasting {
        ticks.tick().await;
        let (object, version) = (posted % objects, posted / objects + 1);
        let body = format!(
            r#"{{"id":"{prefix}_{object}_{version}","type":"thing.updated","object_id":"obj_{object}","object_version":{version}}}"#
        );
        let answer = post(&client, &url, &lab_signed(body, now())).await;
        assert_eq!(
            answer.status,
            200,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        posted += 1;
    }
    posted
}

async fn a_paused_target_receives_nothing_then_everything_in_order(backend: Backend) {
    let storage = Storage::new(backend);
    let (paused_sink, witness) = (Sink::start().await, Sink::start().await);
    let config = ordered_endpoint(&storage)
        .extra(&http_target("erp", &paused_sink.url(), "concurrency = 4"))
        .extra(&http_target("witness", &witness.url(), "concurrency = 4"))
        .to_string();
    let server = Server::start(storage.dir.path(), &config);
    let config_path = server.config_path.clone();
    let admin = server.admin_address().await;

    // Paused through the admin API, resumed with the CLI: one row in the
    // database either way.
    let paused = admin_post(admin, "/admin/targets/ordered/erp/pause").await;
    assert_eq!(paused["changed"], true, "{paused}");
    assert_eq!(paused["target"]["state"], "paused", "{paused}");
    assert_eq!(target_state(&config_path, "erp"), "paused");
    assert!(
        until(Duration::from_secs(10), || async {
            metric_value(admin, "hookinbox_target_state").await == Some(3.0)
        })
        .await,
        "the gauge says paused (3)"
    );

    // Ten seconds of traffic while it is paused.
    let events = post_ordered_for(
        &server,
        4,
        Duration::from_millis(40),
        Duration::from_secs(10),
        "evt_pause",
    )
    .await;
    // The other target of the same events drains through the same worker
    // loop and polling: once it has every event, the paused target's
    // worker has had as long, and as many polls, to take any.
    assert!(
        eventually(Duration::from_secs(60), || witness.accepted().len()
            >= events)
        .await,
        "the witness target received {} of {events}",
        witness.accepted().len()
    );
    assert_eq!(
        paused_sink.received().len(),
        0,
        "a paused target was sent to"
    );
    let rows = rows_of(&storage, "erp").await;
    assert_eq!(rows.len(), events);
    assert!(
        rows.iter()
            .all(|(status, attempts)| status == "PENDING" && *attempts == 0),
        "no attempt while paused: {rows:?}"
    );

    let resumed = hookinbox(&["targets", "resume", "ordered/erp"], &config_path);
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(
        eventually(Duration::from_secs(90), || paused_sink.accepted().len()
            >= events)
        .await,
        "after resume it received {} of {events}",
        paused_sink.accepted().len()
    );
    assert_in_order(&delivered_versions(&paused_sink));
    assert_eq!(paused_sink.received().len(), events, "one attempt each");
    assert_eq!(target_state(&config_path, "erp"), "closed");
    logged(&server, "Target paused by an operator.", 1).await;
}

/// POSTs to the admin listener (no token configured on loopback); the
/// JSON answer, which must be a 200.
async fn admin_post(admin: std::net::SocketAddr, path: &str) -> serde_json::Value {
    let no_body = Signed {
        headers: Vec::new(),
        body: Default::default(),
    };
    let answer = post(&client(), &format!("http://{admin}{path}"), &no_body).await;
    assert_eq!(
        answer.status,
        200,
        "{path}: {}",
        String::from_utf8_lossy(&answer.body)
    );
    answer.json()
}

async fn a_delayed_target_is_not_sent_before_its_delay_and_keeps_the_order(backend: Backend) {
    let storage = Storage::new(backend);
    let sink = Sink::start().await;
    let config = ordered_endpoint(&storage)
        .extra(&http_target("later", &sink.url(), "delay = \"1500ms\""))
        .to_string();
    let server = Server::start(storage.dir.path(), &config);
    let posted = Instant::now();
    post_ordered(&server, 2, 3, "evt_delay").await;
    let all_posted = posted.elapsed();
    assert!(
        eventually(Duration::from_secs(20), || sink.accepted().len() >= 6).await,
        "received {} of 6",
        sink.accepted().len()
    );
    // Each event was accepted after `posted`, so none may arrive before
    // `posted` + the delay.
    let first = sink
        .received()
        .iter()
        .map(|r| r.at)
        .min()
        .expect("something arrived");
    assert!(
        first.duration_since(posted) >= Duration::from_millis(1500),
        "the first delivery came {:?} after the first post (all posted within {all_posted:?})",
        first.duration_since(posted)
    );
    assert_in_order(&delivered_versions(&sink));
    assert_eq!(sink.received().len(), 6, "one attempt each");
}

async fn an_open_breaker_lets_one_probe_per_open_for_and_closes_on_success(backend: Backend) {
    const FAILURES: usize = 3;
    const OPEN_FOR: Duration = Duration::from_secs(1);
    const EVENTS: usize = 5;
    let storage = Storage::new(backend);
    let sink = Sink::start().await;
    let healthy = Arc::new(AtomicBool::new(false));
    let answers = Arc::clone(&healthy);
    sink.respond_with(move |_, _| {
        let status = if answers.load(Ordering::SeqCst) {
            200
        } else {
            503
        };
        (status, vec![])
    });
    // Retried every 20–50 ms, 10 attempts would make a delivery DEAD in
    // well under a second without the breaker; the target answers 503 for
    // several seconds.
    let config = ordered_endpoint(&storage)
        .extra(&http_target(
            "fragile",
            &sink.url(),
            "concurrency = 1\nmax_attempts = 10\n\
             circuit_breaker = { failures = 3, open_for = \"1s\" }",
        ))
        .to_string();
    let server = Server::start(storage.dir.path(), &config);
    let config_path = server.config_path.clone();
    let client = client();
    let url = server.url("/hooks/ordered");
    for n in 0..EVENTS {
        let body = format!(r#"{{"id":"evt_breaker_{n}","type":"thing.updated"}}"#);
        assert_eq!(
            post(&client, &url, &lab_signed(body, now())).await.status,
            200
        );
    }
    // Three failures open it; then three probes, each failing, re-open it.
    assert!(
        eventually(Duration::from_secs(20), || sink.received().len()
            >= FAILURES + 3)
        .await,
        "received {}",
        sink.received().len()
    );
    assert_ne!(target_state(&config_path, "fragile"), "closed");
    let at: Vec<Instant> = sink.received().iter().map(|r| r.at).collect();
    // The failures before it trips go at the retry pace…
    for pair in at[..FAILURES].windows(2) {
        assert!(
            pair[1].duration_since(pair[0]) < OPEN_FOR,
            "closed, it was not held back: {at:?}"
        );
    }
    // …and from the N-th on, at most one request per `open_for`.
    for pair in at[FAILURES - 1..].windows(2) {
        let gap = pair[1].duration_since(pair[0]);
        assert!(
            gap >= OPEN_FOR - Duration::from_millis(50),
            "two requests {gap:?} apart while open: {at:?}"
        );
    }

    healthy.store(true, Ordering::SeqCst);
    assert!(
        eventually(Duration::from_secs(20), || sink.accepted().len() >= EVENTS).await,
        "delivered {} of {EVENTS}",
        sink.accepted().len()
    );
    // The first success (a probe) closed it: the rest followed without a
    // probe's wait each (still open, the other four would take four
    // `open_for`s).
    let accepted: Vec<Instant> = sink.accepted().iter().map(|r| r.at).collect();
    let after_close = accepted[EVENTS - 1].duration_since(accepted[0]);
    assert!(
        after_close < OPEN_FOR * 2,
        "the other {} deliveries took {after_close:?} after the first success",
        EVENTS - 1
    );
    assert!(storage.all_terminal(EVENTS, Duration::from_secs(10)).await);
    let rows = rows_of(&storage, "fragile").await;
    assert_eq!(rows.len(), EVENTS);
    assert!(
        rows.iter().all(|(status, _)| status == "DELIVERED"),
        "nothing went DEAD: {rows:?}"
    );
    let attempts: i64 = rows.iter().map(|(_, attempts)| attempts).sum();
    assert_eq!(
        attempts as usize,
        sink.received().len(),
        "an attempt is a request the target saw: none charged while open"
    );
    assert_eq!(target_state(&config_path, "fragile"), "closed");
    logged(&server, "Circuit breaker moved.", 3).await;
}

/// A `hookinbox work` process, killed when dropped.
struct Worker(Child);

impl Worker {
    fn start(config: &Path) -> Worker {
        Worker(
            Command::new(env!("CARGO_BIN_EXE_hookinbox"))
                .args(["work", "--config"])
                .arg(config)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn hookinbox work"),
        )
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_holds_across_two_worker_processes_on_postgres() {
    const PER_SECOND: f64 = 50.0;
    const BURST: f64 = 10.0;
    const MEASURED: Duration = Duration::from_secs(20);
    // More than 20 s of tokens, so the backlog never runs dry while measured.
    const EVENTS: usize = 1_100;
    let storage = Storage::new(Backend::Postgres);
    let sink = Sink::start().await;
    let config = storage
        .config()
        .extra("[delivery]\npoll_interval = \"20ms\"\nlease = \"2s\"\n")
        .endpoint("limited", "lab", "", LAB_SECRET)
        .extra(&http_target(
            "erp",
            &sink.url(),
            "concurrency = 16\nrate_limit = { per_second = 50, burst = 10 }",
        ))
        .to_string();
    let server = Server::start_with_args(
        storage.dir.path(),
        &{
            let path = storage.dir.path().join("hookinbox.toml");
            std::fs::write(&path, &config).expect("write config");
            path
        },
        &["--no-workers"],
    );
    let client = client();
    let url = server.url("/hooks/limited");
    for n in 0..EVENTS {
        let body = format!(r#"{{"id":"evt_rate_{n}","type":"thing.updated"}}"#);
        assert_eq!(
            post(&client, &url, &lab_signed(body, now())).await.status,
            200
        );
    }
    let _workers = [
        Worker::start(&server.config_path),
        Worker::start(&server.config_path),
    ];
    assert!(
        eventually(Duration::from_secs(60), || sink
            .received()
            .first()
            .is_some_and(|first| first.at.elapsed() >= MEASURED))
        .await,
        "nothing arrived, or not for {MEASURED:?}"
    );
    let received: Vec<Instant> = sink.received().iter().map(|r| r.at).collect();
    let first = received[0];
    let at: Vec<Instant> = received
        .into_iter()
        .filter(|t| t.duration_since(first) <= MEASURED)
        .collect();
    assert!(at.len() < EVENTS, "the backlog lasted the whole measure");
    // Tokens are taken when a lease commits and counted here when the
    // request arrives; a request can be on its way for up to SPREAD.
    const SPREAD: f64 = 0.2;
    // In any stretch of the 20 s, from one arrival to a later one, at
    // most the burst and the rate over its length (and the spread).
    for (i, start) in at.iter().enumerate() {
        for (n, end) in at[i..].iter().enumerate() {
            let t = end.duration_since(*start).as_secs_f64();
            assert!(
                (n + 1) as f64 <= PER_SECOND * (t + SPREAD) + BURST,
                "{} requests within {t:.3} s (of {} in {MEASURED:?})",
                n + 1,
                at.len()
            );
        }
    }
    // And it is not starved: the limit, not the workers, set the pace.
    assert!(
        at.len() as f64 >= 0.8 * PER_SECOND * MEASURED.as_secs_f64(),
        "only {} requests in {MEASURED:?}",
        at.len()
    );
    assert!(
        eventually(Duration::from_secs(30), || sink.accepted().len() >= EVENTS).await,
        "received {} of {EVENTS}",
        sink.accepted().len()
    );
    assert_eq!(sink.received().len(), EVENTS, "one attempt each");
    let rows = rows_of(&storage, "erp").await;
    assert_eq!(rows.len(), EVENTS);
    assert!(
        rows.iter()
            .all(|(status, attempts)| status == "DELIVERED" && *attempts == 1),
        "waiting for tokens is not an attempt: {rows:?}"
    );
}

/// A `hookinbox work --admin-listen 127.0.0.1:0` whose log goes to a file;
/// its admin address, read from that log.
async fn worker_with_admin(config: &Path, log: &Path) -> (Worker, std::net::SocketAddr) {
    let worker = Worker(
        Command::new(env!("CARGO_BIN_EXE_hookinbox"))
            .args(["work", "--admin-listen", "127.0.0.1:0", "--config"])
            .arg(config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("log file"))
            .spawn()
            .expect("spawn hookinbox work"),
    );
    let mut address = None;
    eventually(Duration::from_secs(20), || {
        address = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .find(|l| l.contains("Admin listener up."))
            .and_then(|l| l.split("address=").nth(1))
            .and_then(|a| a.split_whitespace().next())
            .and_then(|a| a.trim_matches('"').parse().ok());
        address.is_some()
    })
    .await;
    let address = address.unwrap_or_else(|| {
        panic!(
            "the worker announced no admin listener: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        )
    });
    (worker, address)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_process_exports_the_target_state_gauge() {
    let storage = Storage::new(Backend::Sqlite);
    let sink = Sink::start().await;
    let config = storage
        .config()
        .extra("[delivery]\npoll_interval = \"50ms\"\n")
        .extra("[admin]\nlisten = \"127.0.0.1:0\"\n")
        .extra("[metrics]\nsample_interval = \"100ms\"\n")
        .endpoint("lab2", "lab", "", LAB_SECRET)
        .extra(&http_target("erp", &sink.url(), ""))
        .to_string();
    let config_path = storage.dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, &config).expect("write config");
    let log = storage.dir.path().join("work.log");
    let (_worker, admin) = worker_with_admin(&config_path, &log).await;
    let gauge = || async move {
        metric_value(
            admin,
            "hookinbox_target_state{endpoint=\"lab2\",target=\"erp\"}",
        )
        .await
    };
    assert!(
        until(Duration::from_secs(10), || async {
            gauge().await == Some(0.0)
        })
        .await,
        "closed (0) in the worker: {:?}",
        gauge().await
    );
    let paused = hookinbox(&["targets", "pause", "lab2/erp"], &config_path);
    assert!(
        paused.status.success(),
        "{}",
        String::from_utf8_lossy(&paused.stderr)
    );
    assert!(
        until(Duration::from_secs(10), || async {
            gauge().await == Some(3.0)
        })
        .await,
        "paused (3) in the worker: {:?}",
        gauge().await
    );
    let resumed = hookinbox(&["targets", "resume", "lab2/erp"], &config_path);
    assert!(resumed.status.success());
    assert!(
        until(Duration::from_secs(10), || async {
            gauge().await == Some(0.0)
        })
        .await,
        "closed (0) again in the worker: {:?}",
        gauge().await
    );

    // Without `--admin-listen` a worker serves no admin listener, even
    // with `[admin]` in the file it shares with `serve`.
    let plain_log = storage.dir.path().join("plain-work.log");
    let _plain = Worker(
        Command::new(env!("CARGO_BIN_EXE_hookinbox"))
            .args(["work", "--config"])
            .arg(&config_path)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&plain_log).expect("log file"))
            .spawn()
            .expect("spawn hookinbox work"),
    );
    assert!(
        eventually(Duration::from_secs(20), || std::fs::read_to_string(
            &plain_log
        )
        .unwrap_or_default()
        .contains("Delivering."))
        .await,
        "the plain worker started"
    );
    assert!(!std::fs::read_to_string(&plain_log)
        .unwrap_or_default()
        .contains("Admin listener up."));
}
