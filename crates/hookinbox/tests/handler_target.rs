//! A program that embeds hookinbox runs its business logic as a `handler`
//! target: the workers apply each event's change in the transaction that
//! records the delivery, so every event counts exactly once, a failing
//! handler is retried without the provider seeing an error, and a handler
//! target with no handler registered stops start-up.

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hookinbox::{HandlerRegistry, Service};
use hookinbox_testing::ledger::{self, Fault, Ledger};
use support::*;

/// A temporary directory with a config whose `lab` endpoint has one
/// handler target named `target_name`, and a database that already has the
/// ledger's table: (dir, database, config file).
fn handler_setup(target_name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    ledger::create(&rusqlite::Connection::open(&db).unwrap()).unwrap();
    let config_path = dir.path().join("hookinbox.toml");
    let config = TestConfig::new(&db).handler_target(target_name);
    std::fs::write(&config_path, config.to_string()).unwrap();
    (dir, db, config_path)
}

/// Whether something accepts connections on `addr` within 20 s.
async fn listening(addr: std::net::SocketAddr) -> bool {
    eventually(Duration::from_secs(20), || {
        std::net::TcpStream::connect(addr).is_ok()
    })
    .await
}

fn booked(db: &std::path::Path) -> Vec<(String, i64)> {
    ledger::amounts(&rusqlite::Connection::open(db).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_is_applied_exactly_once_and_failures_are_retried() {
    let (_dir, db, config_path) = handler_setup("ledger");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // The ledger service is down for the first two tries of the event of 13.
    let handler = Arc::new(Ledger::failing(Fault::FirstTimes {
        amount: 13,
        times: 2,
    }));
    let handlers = HandlerRegistry::new().register("ledger", handler.clone());
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
        eventually(Duration::from_secs(15), || {
            let status = inbox_status(&db);
            status.len() == 20 && status.values().all(|s| s == "PROCESSED")
        })
        .await,
        "{:?}",
        inbox_status(&db)
    );
    let booked = booked(&db);
    assert_eq!(booked.len(), 20, "one ledger row per event");
    assert_eq!(booked.iter().map(|(_, a)| a).sum::<i64>(), 210);
    assert_eq!(handler.faulted_amount_calls(), 3);
    // The failures were recorded as attempts, and the third one applied.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (attempts, failures): (i64, i64) = conn
        .query_row(
            "SELECT d.attempts,
                    (SELECT count(*) FROM delivery_attempt a
                     WHERE a.delivery_id = d.id AND a.error LIKE '%ledger service unavailable%')
             FROM delivery d JOIN inbox i ON i.id = d.inbox_id
             WHERE i.provider_event_id = 'pay_13'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((attempts, failures), (3, 2));
    assert!(deliveries(&db)
        .iter()
        .all(|(status, _)| status == "DELIVERED"));
    // The embedder's shutdown future stops the service cleanly.
    stop.send(()).unwrap();
    let stopped = tokio::time::timeout(Duration::from_secs(10), service).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "the service did not stop cleanly: {stopped:?}"
    );
}

#[tokio::test]
async fn a_handler_target_without_a_registered_handler_stops_start_up() {
    let (_dir, _db, config_path) = handler_setup("billing");
    let handlers = HandlerRegistry::new().register("ledger", Arc::new(Ledger::new()) as Arc<_>);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let error = Service::from_config_file(&config_path)
        .unwrap()
        .handlers(handlers)
        .listener(listener)
        .run_until(std::future::pending())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, hookinbox::Error::HandlerMissing { endpoint, target, backend }
            if endpoint == "lab" && target == "billing" && *backend == "sqlite"),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("\"billing\"") && message.contains("no sqlite handler is registered"),
        "{message}"
    );
    // The stock binary has no handlers: it refuses the same config.
    let (code, stderr) = serve_refused(&config_path, &[]);
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("no sqlite handler is registered"),
        "{stderr}"
    );
}

const CHILD_CONFIG: &str = "HOOKINBOX_TEST_EMBEDDED_CONFIG";
const CHILD_LISTEN: &str = "HOOKINBOX_TEST_EMBEDDED_LISTEN";

/// Not a test of its own: the embedding program that
/// `handler_target_applies_exactly_once_across_kill_9` starts (this test
/// binary re-run with the variables set) and kills. Without them it returns.
#[test]
#[ignore = "the child process of handler_target_applies_exactly_once_across_kill_9"]
fn embedded_service_child() {
    let (Some(config), Some(listen)) = (
        std::env::var_os(CHILD_CONFIG),
        std::env::var(CHILD_LISTEN).ok(),
    ) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Some work per event: 150 events then take over 150 ms to apply, so a
    // kill right after the last ack finds some still pending.
    let counter = Ledger::new().with_work(Duration::from_millis(1));
    let handlers = HandlerRegistry::new().register("ledger", Arc::new(counter));
    let mut settings = hookinbox::config::load(std::path::Path::new(&config)).unwrap();
    settings.server.listen = listen.parse().unwrap();
    runtime
        .block_on(
            Service::from_settings(settings)
                .handlers(handlers)
                .run_until(std::future::pending()),
        )
        .unwrap();
}

fn start_child(config: &std::path::Path, addr: std::net::SocketAddr) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "embedded_service_child",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_CONFIG, config)
        .env(CHILD_LISTEN, addr.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_target_applies_exactly_once_across_kill_9() {
    let (_dir, db, config_path) = handler_setup("ledger");
    let client = client();
    let mut acked = std::collections::HashSet::new();
    let mut kills_with_pending = 0;
    for round in 0..4 {
        let port = ReservedPort::new();
        let mut child = start_child(&config_path, port.addr());
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
        if inbox_status(&db).values().any(|s| s == "ACCEPTED") {
            kills_with_pending += 1;
        }
    }
    assert!(
        kills_with_pending >= 2,
        "no kill landed while handler deliveries were pending"
    );

    let port = ReservedPort::new();
    let mut child = start_child(&config_path, port.addr());
    let done = eventually(Duration::from_secs(30), || {
        inbox_status(&db).values().all(|s| s == "PROCESSED")
    })
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        done,
        "{:?}",
        inbox_status(&db)
            .values()
            .filter(|s| *s != "PROCESSED")
            .count()
    );

    let counts = ledger::entries_per_event(&rusqlite::Connection::open(&db).unwrap()).unwrap();
    let applied_twice: Vec<_> = counts.iter().filter(|(_, n)| *n != 1).collect();
    assert!(
        applied_twice.is_empty(),
        "applied more than once: {applied_twice:?}"
    );
    let counted: std::collections::HashSet<String> = counts.into_iter().map(|(id, _)| id).collect();
    let inbox: std::collections::HashSet<String> =
        inbox_rows(&db).into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(counted, inbox, "every stored event applied exactly once");
    assert!(
        acked.is_subset(&inbox),
        "every acknowledged event is stored"
    );
    assert_eq!(acked.len(), 600);
}
