//! Handler targets on PostgreSQL: the embedder's `PostgresHandler` runs in
//! the transaction that records the delivery, so each event changes its
//! state exactly once — across kill -9 of the embedding program, and with
//! 20,000 events over two ingress and two worker processes.
//!
//! The embedding program is this test binary re-run with variables set
//! (`embedded_child`), so it can be killed like any process.

mod support;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hookinbox::{HandledEvent, HandlerError, HandlerRegistry, PostgresHandler, Service};
use support::postgres::PgSchema;
use support::*;

/// Books each event's amount, once, in the delivery's transaction.
struct PgLedger {
    /// Extra time each booking takes, so a kill finds some still pending.
    work: Duration,
}

#[async_trait]
impl PostgresHandler for PgLedger {
    async fn handle(
        &self,
        tx: &hookinbox::tokio_postgres::Transaction<'_>,
        event: &HandledEvent<'_>,
    ) -> Result<(), HandlerError> {
        let body: serde_json::Value = serde_json::from_slice(event.payload)
            .map_err(|e| HandlerError(format!("not JSON: {e}")))?;
        let amount = body["amount"].as_i64().unwrap_or(0);
        tx.execute(
            "INSERT INTO ledger (inbox_id, amount) VALUES ($1, $2)",
            &[&event.inbox_id, &amount],
        )
        .await
        .map_err(|e| HandlerError(e.to_string()))?;
        if !self.work.is_zero() {
            tokio::time::sleep(self.work).await;
        }
        Ok(())
    }
}

const CHILD_CONFIG: &str = "HOOKINBOX_TEST_PG_EMBEDDED_CONFIG";
const CHILD_LISTEN: &str = "HOOKINBOX_TEST_PG_EMBEDDED_LISTEN";
const CHILD_MODE: &str = "HOOKINBOX_TEST_PG_EMBEDDED_MODE";

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
    let ledger = PgLedger {
        work: Duration::from_millis(2),
    };
    let handlers = HandlerRegistry::new().register_postgres("ledger", Arc::new(ledger));
    let mut settings = hookinbox::config::load(Path::new(&config)).unwrap();
    let service = if mode == "serve" {
        settings.server.listen = std::env::var(CHILD_LISTEN).unwrap().parse().unwrap();
        Service::from_settings(settings)
            .handlers(handlers)
            .run_until(std::future::pending())
    } else {
        let service = Service::from_settings(settings).handlers(handlers);
        return runtime
            .block_on(service.work_until(std::future::pending()))
            .unwrap();
    };
    runtime.block_on(service).unwrap();
}

fn start_child(config: &Path, mode: &str, listen: Option<SocketAddr>) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "embedded_child", "--ignored", "--nocapture"])
        .env(CHILD_CONFIG, config)
        .env(CHILD_MODE, mode)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(listen) = listen {
        command.env(CHILD_LISTEN, listen.to_string());
    }
    command.spawn().unwrap()
}

async fn listening(addr: SocketAddr) -> bool {
    eventually(Duration::from_secs(20), || {
        std::net::TcpStream::connect(addr).is_ok()
    })
    .await
}

/// A schema with the ledger table and a config delivering `lab` to the
/// `ledger` handler target.
async fn setup() -> (PgSchema, tempfile::TempDir, PathBuf) {
    let schema = PgSchema::new();
    schema
        .execute(&format!(
            "CREATE SCHEMA {}; CREATE TABLE ledger (inbox_id text NOT NULL, amount bigint NOT NULL)",
            schema.name
        ))
        .await;
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("hookinbox.toml");
    let config = schema.config(TestConfig::new(Path::new("unused.db")).handler_target("ledger"));
    std::fs::write(&config_path, config.to_string()).unwrap();
    (schema, dir, config_path)
}

async fn wait_all_processed(schema: &PgSchema, expected: i64, within: Duration) {
    let done = async {
        loop {
            if schema
                .count("SELECT count(*) FROM inbox WHERE status = 'PROCESSED'")
                .await
                == expected
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    if tokio::time::timeout(within, done).await.is_err() {
        panic!(
            "not all processed: {} of {expected}",
            schema
                .count("SELECT count(*) FROM inbox WHERE status = 'PROCESSED'")
                .await
        );
    }
}

/// Every stored event booked exactly once, and nothing else booked.
async fn assert_booked_exactly_once(schema: &PgSchema) -> HashSet<String> {
    let booked: HashMap<String, i64> = schema
        .query("SELECT inbox_id, count(*) FROM ledger GROUP BY inbox_id")
        .await
        .iter()
        .map(|row| (row.get::<_, String>(0), row.get::<_, i64>(1)))
        .collect();
    let twice: Vec<_> = booked.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "applied more than once: {twice:?}");
    let inbox: HashSet<String> = schema
        .query("SELECT id FROM inbox")
        .await
        .iter()
        .map(|row| row.get::<_, String>(0))
        .collect();
    let booked: HashSet<String> = booked.into_keys().collect();
    assert_eq!(booked, inbox, "every stored event booked, nothing else");
    inbox
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_handler_applies_exactly_once_across_kill_9() {
    let (schema, _dir, config_path) = setup().await;
    let client = client();
    let mut acked = HashSet::new();
    let mut kills_with_pending = 0;
    for round in 0..4 {
        let port = ReservedPort::new();
        let mut child = start_child(&config_path, "serve", Some(port.addr()));
        assert!(
            listening(port.addr()).await,
            "round {round}: the program did not start"
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
        // Kill while the workers are booking.
        child.kill().unwrap();
        child.wait().unwrap();
        if schema
            .count("SELECT count(*) FROM inbox WHERE status <> 'PROCESSED'")
            .await
            > 0
        {
            kills_with_pending += 1;
        }
    }
    assert!(
        kills_with_pending >= 2,
        "no kill landed while handler deliveries were pending"
    );
    let port = ReservedPort::new();
    let mut child = start_child(&config_path, "serve", Some(port.addr()));
    wait_all_processed(&schema, 600, Duration::from_secs(60)).await;
    child.kill().unwrap();
    child.wait().unwrap();
    let inbox = assert_booked_exactly_once(&schema).await;
    assert_eq!(acked.len(), 600);
    assert!(
        acked.is_subset(&inbox),
        "every acknowledged event is stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_events_over_two_ingress_and_two_workers_are_each_booked_once() {
    let (schema, dir, config_path) = setup().await;
    // Ingress: the stock binary, twice, without workers.
    let a = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);
    let dir_b = tempfile::tempdir().unwrap();
    let b = Server::start_with_args(dir_b.path(), &config_path, &["--no-workers"]);
    // Workers: two embedding programs with the handler.
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
    wait_all_processed(&schema, total as i64, Duration::from_secs(180)).await;
    for worker in &mut workers {
        let _ = worker.kill();
        let _ = worker.wait();
    }
    let inbox = assert_booked_exactly_once(&schema).await;
    assert_eq!(inbox, acked);
}

/// A handler slower than a heartbeat period: its transaction holds the
/// delivery's row lock while the worker extends the lease. The heartbeat
/// must run beside the attempt, not instead of it, or the two wait for
/// each other forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_slower_than_the_heartbeat_period_still_commits() {
    let (schema, _dir, config_path) = setup().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks/lab", listener.local_addr().unwrap());
    // The test lease is 1 s, so a heartbeat every ~333 ms: three or four
    // of them come due while each booking runs.
    let ledger = PgLedger {
        work: Duration::from_millis(1200),
    };
    let handlers = HandlerRegistry::new().register_postgres("ledger", Arc::new(ledger));
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
    wait_all_processed(&schema, 3, Duration::from_secs(30)).await;
    assert_booked_exactly_once(&schema).await;
    let _ = stop.send(());
    let stopped = tokio::time::timeout(Duration::from_secs(20), service).await;
    assert!(matches!(stopped, Ok(Ok(Ok(())))), "{stopped:?}");
}
