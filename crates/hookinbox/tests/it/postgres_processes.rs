//! Many hookinbox processes on one PostgreSQL, real binaries: copies of one
//! event spread over two ingress processes, a worker killed with -9 while it
//! holds leases, per-object ordering across two worker processes, and the
//! database lost under load (a TCP proxy in the test cuts the line; the
//! machine's server keeps running).

use crate::support;

// The store's tests' proxy, to lose PostgreSQL without stopping the server.
use crate::support::cut_proxy;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use cut_proxy::CutProxy;
use support::postgres::{postgres_url, PgSchema};
use support::*;

/// Writes `config` into a new directory and returns both.
fn write_config(config: &TestConfig) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookinbox.toml");
    std::fs::write(&path, config.to_string()).unwrap();
    (dir, path)
}

/// A `hookinbox work` process.
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

    fn kill9(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn idempotency_keys(sink: &Sink) -> Vec<String> {
    sink.accepted()
        .iter()
        .map(|r| r.header("idempotency-key"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_copies_over_two_ingress_processes_are_one_row_and_one_delivery() {
    let schema = PgSchema::new();
    let sink = Sink::start().await;
    let config =
        schema.config(TestConfig::new(Path::new("unused.db")).http_target(&sink.url(), ""));
    let (dir, config_path) = write_config(&config);
    let a = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);
    let dir_b = tempfile::tempdir().unwrap();
    let b = Server::start_with_args(dir_b.path(), &config_path, &["--no-workers"]);
    let _workers = [Worker::start(&config_path), Worker::start(&config_path)];

    let event = lab_event("one_logical_event");
    let client = client();
    let sends: Vec<_> = (0..1000)
        .map(|n| {
            let url = if n % 2 == 0 {
                a.url("/hooks/lab")
            } else {
                b.url("/hooks/lab")
            };
            let (client, event) = (client.clone(), event.clone());
            tokio::spawn(async move {
                retry_until_accepted(&client, &url, &event, Duration::from_secs(20)).await
            })
        })
        .collect();
    let mut ids = HashSet::new();
    let mut inserted = 0;
    for send in sends {
        let answer = send.await.unwrap();
        assert_eq!(answer.status, 200);
        ids.insert(answer.json()["id"].as_str().unwrap().to_owned());
        if answer.json()["duplicate"] == false {
            inserted += 1;
        }
    }
    assert_eq!(ids.len(), 1, "every answer names the same inbox id");
    assert_eq!(inserted, 1, "exactly one request inserted it");
    assert_eq!(schema.count("SELECT count(*) FROM inbox").await, 1);
    assert_eq!(schema.count("SELECT count(*) FROM delivery").await, 1);

    let delivered = async {
        loop {
            if schema
                .count("SELECT count(*) FROM inbox WHERE status = 'PROCESSED'")
                .await
                == 1
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), delivered)
        .await
        .expect("the event is delivered");
    // PROCESSED is recorded after the sink answered: nothing is in flight.
    // One delivery row, and the sink saw only that event's key. (Delivery
    // is at-least-once: on a machine loaded enough for a lease to run out,
    // the other worker may send it again, under the same key.)
    let keys: HashSet<String> = idempotency_keys(&sink).into_iter().collect();
    assert_eq!(keys, ids);
    assert_eq!(
        schema
            .count("SELECT count(*) FROM delivery WHERE status = 'DELIVERED'")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_with_its_leases_held_leaves_nothing_undelivered() {
    let schema = PgSchema::new();
    let sink = Sink::start().await;
    // Slow answers: the killed worker holds leases with requests in flight.
    sink.set_delay(Duration::from_millis(30));
    let config = schema.config(
        TestConfig::new(Path::new("unused.db")).http_target(&sink.url(), "concurrency = 8"),
    );
    let (dir, config_path) = write_config(&config);
    let ingress = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);
    let client = client();
    let mut acked = HashSet::new();
    for n in 0..300 {
        let answer = post(
            &client,
            &ingress.url("/hooks/lab"),
            &lab_event(&format!("k{n}")),
        )
        .await;
        assert_eq!(answer.status, 200);
        acked.insert(answer.json()["id"].as_str().unwrap().to_owned());
    }
    let mut doomed = Worker::start(&config_path);
    let _survivor = Worker::start(&config_path);
    // Kill one once deliveries are well under way, not before.
    let under_way = eventually(Duration::from_secs(20), || sink.accepted().len() >= 40).await;
    assert!(under_way, "delivered: {}", sink.accepted().len());
    doomed.kill9();
    let leased_by_the_dead = schema
        .count("SELECT count(*) FROM delivery WHERE status = 'LEASED'")
        .await;

    let finished = async {
        loop {
            if schema
                .count("SELECT count(*) FROM inbox WHERE status = 'PROCESSED'")
                .await
                == 300
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), finished)
        .await
        .expect("every event finishes after the kill (leases reclaimed)");
    let keys = idempotency_keys(&sink);
    let delivered: HashSet<String> = keys.iter().cloned().collect();
    assert_eq!(
        delivered, acked,
        "every acknowledged event reached the target"
    );
    // At-least-once: only what was leased and not yet settled at the kill
    // may come twice (sent, answered, its settlement not committed). Leases
    // are taken in batches and settlements group-committed, so that is not
    // bounded by the target's concurrency but by the rows still IN_FLIGHT
    // right after the kill (the survivor's included).
    let repeats = keys.len() - delivered.len();
    assert!(
        repeats <= leased_by_the_dead as usize,
        "{repeats} repeats, more than the {leased_by_the_dead} deliveries leased at the kill"
    );
}

fn versioned(id: &str, version: i64) -> Signed {
    lab_signed(
        format!(
            r#"{{"id":"{id}","type":"order.updated","object_id":"order_1","object_version":{version}}}"#
        ),
        now(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worker_processes_deliver_one_object_in_version_order_and_skip_stale_ones() {
    let schema = PgSchema::new();
    let sink = Sink::start().await;
    let config = schema.config(
        TestConfig::new(Path::new("unused.db")).http_target(&sink.url(), "concurrency = 8"),
    );
    let (dir, config_path) = write_config(&config);
    let ingress = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);
    let client = client();
    // Out of order before any worker runs: 5, 2, 8, 1, 7, 3, 6, 4.
    for version in [5, 2, 8, 1, 7, 3, 6, 4] {
        let answer = post(
            &client,
            &ingress.url("/hooks/lab"),
            &versioned(&format!("o{version}"), version),
        )
        .await;
        assert_eq!(answer.status, 200);
    }
    let _workers = [Worker::start(&config_path), Worker::start(&config_path)];
    let settled = async {
        loop {
            if schema
                .count("SELECT count(*) FROM inbox WHERE status = 'PROCESSED'")
                .await
                == 8
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), settled)
        .await
        .expect("every version settles");
    let versions: Vec<i64> = sink
        .accepted()
        .iter()
        .map(|r| {
            let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            body["object_version"].as_i64().unwrap()
        })
        .collect();
    assert_eq!(
        versions,
        (1..=8).collect::<Vec<_>>(),
        "one at a time, in version order"
    );

    // A version older than the delivered 8 arrives: never sent.
    let answer = post(&client, &ingress.url("/hooks/lab"), &versioned("o_late", 3)).await;
    assert_eq!(answer.status, 200);
    let skipped = async {
        loop {
            let rows = schema
                .query(
                    "SELECT d.status FROM delivery d JOIN inbox i ON i.id = d.inbox_id \
                     WHERE i.provider_event_id = 'o_late'",
                )
                .await;
            if let Some(row) = rows.first() {
                let status: String = row.get(0);
                if status != "PENDING" && status != "IN_FLIGHT" {
                    return status;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let status = tokio::time::timeout(Duration::from_secs(20), skipped)
        .await
        .expect("the stale version settles");
    assert_eq!(status, "SKIPPED_STALE");
    assert_eq!(sink.accepted().len(), 8, "the stale version was not sent");
}

/// One request's outcome during the outage test.
#[derive(Debug, Clone)]
struct Outcome {
    event_id: String,
    status: u16,
    retry_after: bool,
    phase: Phase,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Before,
    Cut,
    Mended,
}

async fn readiness(client: &HttpClient, admin: std::net::SocketAddr) -> (u16, String) {
    let empty = Signed {
        headers: vec![],
        body: Bytes::new(),
    };
    let answer = send(client, "GET", &format!("http://{admin}/readyz"), &empty)
        .await
        .expect("the admin listener answers");
    (
        answer.status,
        String::from_utf8_lossy(&answer.body).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_database_gives_only_503s_and_the_process_recovers_without_a_restart() {
    let schema = PgSchema::new();
    let url = postgres_url();
    let upstream = url
        .split('@')
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("HOOKINBOX_TEST_POSTGRES_URL is postgres://user@host:port/db")
        .to_owned();
    let proxy = CutProxy::start(upstream.clone()).await;
    let through_proxy = url.replacen(&upstream, &proxy.addr.to_string(), 1);
    let config = TestConfig::new(Path::new("unused.db"))
        .storage_url(&through_proxy)
        .storage(&format!(
            "schema = \"{}\"\npool_size = 4\ncommit_timeout = \"1s\"\nconnect_timeout = \"1s\"",
            schema.name
        ))
        .extra("[admin]\nlisten = \"127.0.0.1:0\"\n");
    let (dir, config_path) = write_config(&config);
    let server = Server::start_with(dir.path(), &config_path);
    let admin = server.admin_address().await;
    let client = client();
    assert_eq!(readiness(&client, admin).await.0, 200);

    let phase = Arc::new(Mutex::new(Phase::Before));
    let outcomes = Arc::new(Mutex::new(Vec::<Outcome>::new()));
    let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut load = Vec::new();
    for lane in 0..4 {
        let (client, url) = (client.clone(), server.url("/hooks/lab"));
        let (phase, outcomes, running) = (phase.clone(), outcomes.clone(), running.clone());
        load.push(tokio::spawn(async move {
            let mut n = 0;
            while running.load(std::sync::atomic::Ordering::SeqCst) {
                let event_id = format!("loss_{lane}_{n}");
                n += 1;
                let at = *phase.lock().unwrap();
                let answer = send(&client, "POST", &url, &lab_event(&event_id)).await;
                let (status, retry_after) = match &answer {
                    Ok(answer) => (answer.status, answer.headers.contains_key("retry-after")),
                    Err(_) => (0, false),
                };
                outcomes.lock().unwrap().push(Outcome {
                    event_id,
                    status,
                    retry_after,
                    phase: at,
                });
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    *phase.lock().unwrap() = Phase::Cut;
    proxy.cut().await;
    // Requests sent while the line is down: all refused, none hangs.
    let refused = eventually(Duration::from_secs(10), || {
        outcomes
            .lock()
            .unwrap()
            .iter()
            .filter(|o| o.phase == Phase::Cut && o.status == 503)
            .count()
            >= 8
    })
    .await;
    let (ready_status, ready_body) = readiness(&client, admin).await;
    proxy.mend();
    *phase.lock().unwrap() = Phase::Mended;
    assert!(
        refused,
        "{:?}",
        outcomes
            .lock()
            .unwrap()
            .iter()
            .rev()
            .take(8)
            .collect::<Vec<_>>()
    );
    assert_eq!(ready_status, 503, "{ready_body}");
    assert!(ready_body.contains("\"storage\""), "{ready_body}");

    // Recovery without a restart: new events are accepted again.
    let recovered = eventually(Duration::from_secs(20), || {
        outcomes
            .lock()
            .unwrap()
            .iter()
            .filter(|o| o.phase == Phase::Mended && o.status == 200)
            .count()
            >= 20
    })
    .await;
    running.store(false, std::sync::atomic::Ordering::SeqCst);
    for lane in load {
        lane.await.unwrap();
    }
    assert!(recovered, "no 200 after the database came back");
    assert_eq!(readiness(&client, admin).await.0, 200, "ready again");

    let outcomes = outcomes.lock().unwrap().clone();
    let by_status: HashMap<u16, usize> = outcomes.iter().fold(HashMap::new(), |mut m, o| {
        *m.entry(o.status).or_default() += 1;
        m
    });
    // Only 200 and 503 + Retry-After: never another answer, never a dropped connection.
    for outcome in &outcomes {
        assert!(
            outcome.status == 200 || (outcome.status == 503 && outcome.retry_after),
            "{outcome:?} (all: {by_status:?})"
        );
    }
    // Every 2xx is in the database (read directly, not through the proxy).
    let stored: HashSet<String> = schema
        .query("SELECT provider_event_id FROM inbox")
        .await
        .iter()
        .map(|row| row.get::<_, String>(0))
        .collect();
    let acked: Vec<&Outcome> = outcomes.iter().filter(|o| o.status == 200).collect();
    let missing: Vec<&&Outcome> = acked
        .iter()
        .filter(|o| !stored.contains(&o.event_id))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged but not stored: {missing:?}"
    );
    assert!(
        by_status.get(&200).copied().unwrap_or(0) >= 20,
        "{by_status:?}"
    );
}
