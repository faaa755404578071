//! A program that embeds hookinbox runs its business logic as a `handler`
//! target: the workers apply each event's change in the transaction that
//! records the delivery (the store's SQLite connection, or the open
//! PostgreSQL transaction), so every event counts exactly once — across
//! retries, kill -9 of the embedding program, and on PostgreSQL across
//! processes — a failing handler is retried without the provider seeing an
//! error, and a handler target with no handler registered stops start-up.
//!
//! The embedding program is this test binary re-run with variables set
//! (`embedded_child`), so it can be killed like any process. It registers
//! the one test ledger (`hookinbox_testing::ledger`) for both backends.

use crate::support;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookinbox::{HandlerRegistry, Service};
use hookinbox_testing::ledger::{Fault, Ledger};
use support::*;

on_both_backends!(
    every_event_is_applied_exactly_once_and_failures_are_retried,
    a_handler_target_without_a_registered_handler_stops_start_up,
    handler_target_applies_exactly_once_across_kill_9,
);

/// `ledger` registered for both backends under the target name `ledger`.
fn ledger_handlers(ledger: Arc<Ledger>) -> HandlerRegistry {
    HandlerRegistry::new()
        .register("ledger", ledger.clone())
        .register_postgres("ledger", ledger)
}

/// A store with the ledger's table, and a config file whose `lab` endpoint
/// has one handler target named `target_name`.
async fn handler_setup(backend: Backend, target_name: &str) -> (Storage, PathBuf) {
    let storage = Storage::new(backend);
    storage.create_ledger().await;
    let config_path = storage.dir.path().join("hookinbox.toml");
    let config = storage.config().handler_target(target_name);
    std::fs::write(&config_path, config.to_string()).unwrap();
    (storage, config_path)
}

/// Whether something accepts connections on `addr` within 20 s.
async fn listening(addr: SocketAddr) -> bool {
    eventually(Duration::from_secs(20), || {
        std::net::TcpStream::connect(addr).is_ok()
    })
    .await
}

/// Every stored event booked exactly once, and nothing else booked; the
/// stored events' ids.
async fn assert_booked_exactly_once(storage: &Storage) -> HashSet<String> {
    let mut per_event: HashMap<String, usize> = HashMap::new();
    for (inbox_id, _) in storage.ledger_entries().await {
        *per_event.entry(inbox_id).or_default() += 1;
    }
    let twice: Vec<_> = per_event.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "applied more than once: {twice:?}");
    let inbox: HashSet<String> = storage.events().await.into_iter().map(|e| e.id).collect();
    let booked: HashSet<String> = per_event.into_keys().collect();
    assert_eq!(booked, inbox, "every stored event booked, nothing else");
    inbox
}

/// How many events are PROCESSED (one cheap count).
async fn processed(storage: &Storage) -> u64 {
    let stats = storage.reads().await.stats().await.expect("stats");
    stats.by_status.get("PROCESSED").copied().unwrap_or(0)
}

/// Waits until `expected` events are PROCESSED. It fails only when no event
/// has been processed for `stall`: a slow machine takes longer, a lost
/// event or a stuck lease does not finish at all.
async fn wait_all_processed(storage: &Storage, expected: u64, stall: Duration) {
    let mut last = processed(storage).await;
    let mut last_progress = Instant::now();
    while last < expected {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = processed(storage).await;
        if now > last {
            (last, last_progress) = (now, Instant::now());
        } else if last_progress.elapsed() > stall {
            panic!("stalled at {last} of {expected} processed for {stall:?}");
        }
    }
    assert_eq!(last, expected, "more processed than sent");
}

async fn every_event_is_applied_exactly_once_and_failures_are_retried(backend: Backend) {
    let (storage, config_path) = handler_setup(backend, "ledger").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // The ledger service is down for the first two tries of the event of 13.
    let handler = Arc::new(Ledger::failing(Fault::FirstTimes {
        amount: 13,
        times: 2,
    }));
    let handlers = ledger_handlers(handler.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // A start-up error drops the listener: the sends below fail, never hang.
    let service = tokio::spawn(async move {
        Service::from_config_file(&config_path)?
            .handlers(handlers)
            .listener(listener)
            .run_until(async {
                let _ = stopped.await;
            })
            .await
    });
    let url = format!("http://{addr}/hooks/lab");
    let client = client();

    // 20 events, each sent twice at once (a provider retrying).
    let sends: Vec<_> = (1..=20)
        .flat_map(|amount| [amount, amount])
        .map(|amount| {
            let (client, url) = (client.clone(), url.clone());
            let event = lab_signed(
                format!(r#"{{"id":"pay_{amount}","type":"payment.succeeded","amount":{amount}}}"#),
                now(),
            );
            tokio::spawn(async move { post(&client, &url, &event).await.status })
        })
        .collect();
    for send in sends {
        assert_eq!(
            send.await.unwrap(),
            200,
            "acknowledged before any handler ran"
        );
    }

    assert!(
        storage.all_terminal(20, Duration::from_secs(15)).await,
        "{:?}",
        storage.statuses().await
    );
    assert!(storage
        .statuses()
        .await
        .values()
        .all(|status| status == "PROCESSED"));
    let booked = storage.ledger_entries().await;
    assert_eq!(booked.len(), 20, "one ledger row per event");
    assert_eq!(booked.iter().map(|(_, a)| a).sum::<i64>(), 210);
    assert_eq!(handler.faulted_amount_calls(), 3);
    // The failures were recorded as attempts, and the third one applied.
    let deliveries = storage.deliveries().await;
    let thirteen = deliveries
        .iter()
        .find(|d| d.event_id == "pay_13")
        .expect("the delivery of pay_13");
    let failures = thirteen
        .attempt_log
        .iter()
        .filter(|a| {
            a.error
                .as_deref()
                .is_some_and(|e| e.contains("ledger service unavailable"))
        })
        .count();
    assert_eq!((thirteen.attempts, failures), (3, 2), "{thirteen:?}");
    assert!(deliveries.iter().all(|d| d.status == "DELIVERED"));
    // The embedder's shutdown future stops the service cleanly.
    stop.send(()).unwrap();
    let stopped = tokio::time::timeout(Duration::from_secs(10), service).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "the service did not stop cleanly: {stopped:?}"
    );
}

async fn a_handler_target_without_a_registered_handler_stops_start_up(backend: Backend) {
    let (_storage, config_path) = handler_setup(backend, "billing").await;
    let handlers = ledger_handlers(Arc::new(Ledger::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let error = Service::from_config_file(&config_path)
        .unwrap()
        .handlers(handlers)
        .listener(listener)
        .run_until(std::future::pending())
        .await
        .unwrap_err();
    let backend_name = match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    assert!(
        matches!(&error, hookinbox::Error::HandlerMissing { endpoint, target, backend }
            if endpoint == "lab" && target == "billing" && *backend == backend_name),
        "{error:?}"
    );
    let refusal = format!("no {backend_name} handler is registered");
    let message = error.to_string();
    assert!(
        message.contains("\"billing\"") && message.contains(&refusal),
        "{message}"
    );
    // The stock binary has no handlers: it refuses the same config.
    let (code, stderr) = serve_refused(&config_path, &[]);
    assert_ne!(code, Some(0));
    assert!(stderr.contains(&refusal), "{stderr}");
}

const CHILD_CONFIG: &str = "HOOKINBOX_TEST_EMBEDDED_CONFIG";
const CHILD_LISTEN: &str = "HOOKINBOX_TEST_EMBEDDED_LISTEN";
const CHILD_MODE: &str = "HOOKINBOX_TEST_EMBEDDED_MODE";

/// Not a test of its own: the embedding program the tests below start
/// (this binary re-run with the variables set) and kill. `serve` mode runs
/// ingress and workers; `work` mode only workers. Without them it returns.
#[test]
#[ignore = "the child process of the tests in this file"]
fn embedded_child() {
    let (Some(config), Ok(mode)) = (std::env::var_os(CHILD_CONFIG), std::env::var(CHILD_MODE))
    else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Some work per event: 150 events then take over 150 ms to apply, so a
    // kill right after the last ack finds some still pending.
    let handlers = ledger_handlers(Arc::new(Ledger::new().with_work(Duration::from_millis(1))));
    let mut settings = hookinbox::config::load(Path::new(&config)).unwrap();
    if mode == "serve" {
        settings.server.listen = std::env::var(CHILD_LISTEN).unwrap().parse().unwrap();
        let service = Service::from_settings(settings).handlers(handlers);
        runtime
            .block_on(service.run_until(std::future::pending()))
            .unwrap();
    } else {
        let service = Service::from_settings(settings).handlers(handlers);
        runtime
            .block_on(service.work_until(std::future::pending()))
            .unwrap();
    }
}

fn start_child(config: &Path, mode: &str, listen: Option<SocketAddr>) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "handler_target::embedded_child",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_CONFIG, config)
        .env(CHILD_MODE, mode)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(listen) = listen {
        command.env(CHILD_LISTEN, listen.to_string());
    }
    command.spawn().unwrap()
}

async fn handler_target_applies_exactly_once_across_kill_9(backend: Backend) {
    let (storage, config_path) = handler_setup(backend, "ledger").await;
    let client = client();
    let mut acked = HashSet::new();
    let mut kills_with_pending = 0;
    for round in 0..4 {
        let port = ReservedPort::new();
        let mut child = start_child(&config_path, "serve", Some(port.addr()));
        assert!(
            listening(port.addr()).await,
            "round {round}: the embedding program did not start"
        );
        let url = format!("http://{}/hooks/lab", port.addr());
        let sends: Vec<_> = (0..150)
            .map(|n| {
                let (client, url) = (client.clone(), url.clone());
                let event = lab_event(&format!("k{round}-{n}"));
                tokio::spawn(async move {
                    send(&client, "POST", &url, &event)
                        .await
                        .ok()
                        .filter(|answer| answer.status == 200)
                        .map(|answer| answer.json()["id"].as_str().unwrap().to_owned())
                })
            })
            .collect();
        for send in sends {
            if let Some(id) = send.await.unwrap() {
                acked.insert(id);
            }
        }
        // Kill while the workers are applying the handler.
        child.kill().unwrap();
        child.wait().unwrap();
        if storage.statuses().await.values().any(|s| s == "ACCEPTED") {
            kills_with_pending += 1;
        }
    }
    assert!(
        kills_with_pending >= 2,
        "only {kills_with_pending} of 4 kills landed while handler deliveries were pending"
    );

    let port = ReservedPort::new();
    let mut child = start_child(&config_path, "serve", Some(port.addr()));
    wait_all_processed(&storage, 600, Duration::from_secs(30)).await;
    child.kill().unwrap();
    child.wait().unwrap();

    let inbox = assert_booked_exactly_once(&storage).await;
    assert_eq!(acked.len(), 600, "every send acknowledged before its kill");
    assert!(
        acked.is_subset(&inbox),
        "every acknowledged event is stored"
    );
}

/// A handler slower than a heartbeat period, on PostgreSQL: its transaction
/// holds the delivery's row lock while the worker extends the lease. The
/// heartbeat must run beside the attempt, not instead of it, or the two
/// wait for each other forever. (On SQLite a handler runs on the store's
/// one writer thread, so a handler this slow holds up every commit,
/// ingress included; docs/delivery.md says to keep SQLite handlers short.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_handler_slower_than_the_heartbeat_period_still_commits() {
    let (storage, config_path) = handler_setup(Backend::Postgres, "ledger").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks/lab", listener.local_addr().unwrap());
    // The test lease is 1 s, so a heartbeat every ~333 ms: three or four
    // of them come due while each booking runs.
    let handlers = ledger_handlers(Arc::new(
        Ledger::new().with_work(Duration::from_millis(1200)),
    ));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let service = tokio::spawn(
        Service::from_config_file(&config_path)
            .unwrap()
            .handlers(handlers)
            .listener(listener)
            .run_until(async {
                let _ = stopped.await;
            }),
    );
    let client = client();
    for n in 0..3 {
        let answer = post(&client, &url, &lab_event(&format!("slow{n}"))).await;
        assert_eq!(answer.status, 200);
    }
    wait_all_processed(&storage, 3, Duration::from_secs(30)).await;
    assert_booked_exactly_once(&storage).await;
    let _ = stop.send(());
    let stopped = tokio::time::timeout(Duration::from_secs(20), service).await;
    assert!(matches!(stopped, Ok(Ok(Ok(())))), "{stopped:?}");
}

/// The scale-out deployment of docs/architecture.md §9 with a handler: two ingress
/// processes (the stock binary, `serve --no-workers`) and two worker
/// processes (the embedding program, `work`) on one PostgreSQL; 20,000
/// distinct events, each booked exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_twenty_thousand_events_over_two_ingress_and_two_workers_are_each_booked_once() {
    let (storage, config_path) = handler_setup(Backend::Postgres, "ledger").await;
    let dir = storage.dir.path();
    let a = Server::start_with_args(dir, &config_path, &["--no-workers"]);
    let dir_b = tempfile::tempdir().unwrap();
    let b = Server::start_with_args(dir_b.path(), &config_path, &["--no-workers"]);
    let mut workers = [
        start_child(&config_path, "work", None),
        start_child(&config_path, "work", None),
    ];
    let client = client();
    let urls = [a.url("/hooks/lab"), b.url("/hooks/lab")];
    let total = 20_000;
    let lanes = 32;
    let mut tasks = Vec::new();
    for lane in 0..lanes {
        let (client, urls) = (client.clone(), urls.clone());
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for n in (lane..total).step_by(lanes) {
                let event = lab_event(&format!("e{n}"));
                let answer =
                    retry_until_accepted(&client, &urls[n % 2], &event, Duration::from_secs(30))
                        .await;
                ids.push(answer.json()["id"].as_str().unwrap().to_owned());
            }
            ids
        }));
    }
    let mut acked = HashSet::new();
    for task in tasks {
        acked.extend(task.await.unwrap());
    }
    assert_eq!(acked.len(), total);
    wait_all_processed(&storage, total as u64, Duration::from_secs(60)).await;
    for worker in &mut workers {
        let _ = worker.kill();
        let _ = worker.wait();
    }
    let inbox = assert_booked_exactly_once(&storage).await;
    assert_eq!(inbox, acked);
}
