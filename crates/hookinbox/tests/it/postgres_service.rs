//! The stock binary on PostgreSQL (`storage.url = "postgres://…"`), against
//! the real server: ingress, deduplication and delivery as on SQLite; many
//! `serve` processes sharing one database without a duplicate row or a
//! double delivery; the operator commands (`events`, `stats`, `replay`,
//! `migrate`) on the same database; the password kept out of what is
//! printed; and an unreachable database refusing start-up with one line.
//! State is observed through the CLI (what an operator has) and, where the
//! rows themselves are the point, with SQL in the test's own schema.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use support::postgres::{postgres_url, PgSchema};
use support::*;

fn hookinbox(args: &[&str], config: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .expect("run hookinbox")
}

/// `events list --json` (with `filters`), as the operator sees it.
fn listed(config: &Path, filters: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["events", "list", "--json", "--limit", "1000"];
    args.extend_from_slice(filters);
    let out = hookinbox(&args, config);
    assert!(
        out.status.success(),
        "events list: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .expect("events list prints JSON")
        .as_array()
        .expect("an array")
        .clone()
}

fn status_of(config: &Path, provider_event_id: &str) -> Option<String> {
    listed(config, &[])
        .iter()
        .find(|e| e["provider_event_id"] == provider_event_id)
        .and_then(|e| e["status"].as_str().map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_postgres_accepts_once_delivers_and_answers_the_operator() {
    let schema = PgSchema::new();
    let sink = Sink::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = schema.config(
        TestConfig::new(&dir.path().join("unused.db")).http_target(&sink.url(), "max_attempts = 2"),
    );
    let server = Server::start(dir.path(), &config.to_string());
    let client = client();

    let mut ids = Vec::new();
    for n in 0..5 {
        let answer = post(
            &client,
            &server.url("/hooks/lab"),
            &lab_event(&format!("pg_{n}")),
        )
        .await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        assert_eq!(answer.json()["duplicate"], false);
        ids.push(answer.json()["id"].as_str().unwrap().to_owned());
    }
    // The provider's retry: the same event again, answered with the same id.
    let again = post(&client, &server.url("/hooks/lab"), &lab_event("pg_3")).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["duplicate"], true);
    assert_eq!(again.json()["id"], ids[3].as_str());
    // Unverified: refused, nothing stored.
    let forged = post(
        &client,
        &server.url("/hooks/lab"),
        &lab_event("pg_forged").with("x-signature", "v1=00"),
    )
    .await;
    assert_eq!(forged.status, 401);

    assert!(
        eventually(Duration::from_secs(20), || sink.accepted().len() >= 5).await,
        "delivered: {}",
        sink.accepted().len()
    );
    let config_path = &server.config_path;
    assert!(
        eventually(Duration::from_secs(20), || listed(
            config_path,
            &["--status", "processed"]
        )
        .len()
            == 5)
        .await,
        "{:?}",
        listed(config_path, &[])
    );
    let keys: std::collections::HashSet<String> = sink
        .accepted()
        .iter()
        .map(|r| r.header("idempotency-key"))
        .collect();
    assert_eq!(
        keys,
        ids.iter().cloned().collect(),
        "each event delivered, under its inbox id"
    );
    assert_eq!(sink.accepted().len(), 5, "and each once");

    // The rows themselves: one inbox row per logical event, its body once.
    assert_eq!(schema.count("SELECT count(*) FROM inbox").await, 5);
    assert_eq!(schema.count("SELECT count(*) FROM inbox_payload").await, 5);
    assert_eq!(
        schema
            .count("SELECT count(*) FROM delivery WHERE status = 'DELIVERED'")
            .await,
        5
    );

    // The operator's commands read the same database.
    let show = hookinbox(
        &["events", "show", "--payload", "--json", &ids[0]],
        config_path,
    );
    assert!(
        show.status.success(),
        "{}",
        String::from_utf8_lossy(&show.stderr)
    );
    let detail: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(detail["status"], "PROCESSED");
    assert_eq!(detail["deliveries"][0]["status"], "DELIVERED");
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(detail["payload_base64"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        raw,
        lab_event("pg_0").body.as_ref(),
        "the raw body as received"
    );

    let stats = hookinbox(&["stats", "--json"], config_path);
    assert!(
        stats.status.success(),
        "{}",
        String::from_utf8_lossy(&stats.stderr)
    );
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats["total"], 5);

    // Replay one: delivered again, with the same idempotency key.
    let replay = hookinbox(&["events", "replay", "--json", &ids[1]], config_path);
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    assert!(
        eventually(Duration::from_secs(20), || sink.accepted().len() == 6).await,
        "the replay was delivered"
    );
    assert_eq!(sink.accepted()[5].header("idempotency-key"), ids[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_database_store_and_deliver_each_event_once() {
    let schema = PgSchema::new();
    let sink = Sink::start().await;
    let config = schema
        .config(TestConfig::new(Path::new("unused.db")).http_target(&sink.url(), ""))
        .to_string();
    let dir_a = tempfile::tempdir().unwrap();
    let dir_b = tempfile::tempdir().unwrap();
    let a = Server::start(dir_a.path(), &config);
    let b = Server::start(dir_b.path(), &config);
    let client = client();

    // Every event reaches both processes at once (a provider retrying
    // through a load balancer): one row each, both answers name it.
    let mut sends = Vec::new();
    for n in 0..40 {
        let event = lab_event(&format!("shared_{n}"));
        let (url_a, url_b) = (a.url("/hooks/lab"), b.url("/hooks/lab"));
        let (client_a, client_b) = (client.clone(), client.clone());
        let (event_a, event_b) = (event.clone(), event);
        sends.push(tokio::spawn(async move {
            let (x, y) = tokio::join!(
                post(&client_a, &url_a, &event_a),
                post(&client_b, &url_b, &event_b)
            );
            (x, y)
        }));
    }
    for send in sends {
        let (x, y) = send.await.unwrap();
        assert_eq!(
            (x.status, y.status),
            (200, 200),
            "{:?} {:?}",
            x.body,
            y.body
        );
        assert_eq!(x.json()["id"], y.json()["id"], "one event, one inbox id");
        let duplicates = [&x, &y]
            .iter()
            .filter(|a| a.json()["duplicate"] == true)
            .count();
        assert_eq!(duplicates, 1, "exactly one of the two inserted it");
    }
    assert_eq!(schema.count("SELECT count(*) FROM inbox").await, 40);
    assert_eq!(schema.count("SELECT count(*) FROM delivery").await, 40);

    // Both processes' workers lease from the same outbox: each event is
    // delivered once, not once per process.
    assert!(
        eventually(Duration::from_secs(30), || sink.accepted().len() >= 40).await,
        "delivered: {}",
        sink.accepted().len()
    );
    assert!(
        eventually(Duration::from_secs(20), || listed(
            &a.config_path,
            &["--status", "processed"]
        )
        .len()
            == 40)
        .await
    );
    let mut keys: Vec<String> = sink
        .accepted()
        .iter()
        .map(|r| r.header("idempotency-key"))
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 40);
    assert_eq!(sink.accepted().len(), 40, "no event delivered twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_process_delivers_what_an_ingress_only_process_stored() {
    let schema = PgSchema::new();
    let sink = Sink::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config =
        schema.config(TestConfig::new(Path::new("unused.db")).http_target(&sink.url(), ""));
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let ingress = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);
    for n in 0..3 {
        let answer = post(
            &client(),
            &ingress.url("/hooks/lab"),
            &lab_event(&format!("w_{n}")),
        )
        .await;
        assert_eq!(answer.status, 200);
    }
    // Nothing delivers yet: the only process has no workers.
    assert_eq!(status_of(&config_path, "w_0").as_deref(), Some("ACCEPTED"));
    assert!(sink.accepted().is_empty());

    let mut worker = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["work", "--config"])
        .arg(&config_path)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // PROCESSED is recorded after the target answered: wait for the record,
    // not for the sink, before stopping the worker.
    let processed = eventually(Duration::from_secs(20), || {
        listed(&config_path, &["--status", "processed"]).len() == 3
    })
    .await;
    let _ = worker.kill();
    let _ = worker.wait();
    assert!(processed, "{:?}", listed(&config_path, &[]));
    assert_eq!(sink.accepted().len(), 3, "each delivered once");
}

#[test]
fn migrate_creates_the_schema_and_the_password_is_never_printed() {
    let schema = PgSchema::new();
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(
        &config_path,
        schema
            .config(TestConfig::new(Path::new("unused.db")))
            .to_string(),
    )
    .unwrap();
    let migrated = hookinbox(&["migrate"], &config_path);
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    // Twice is fine: the schema is already there, and nothing says so —
    // no `NOTICE: relation "schema_migrations" already exists` on every
    // command.
    let again = hookinbox(&["migrate"], &config_path);
    assert!(again.status.success());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!stderr.contains("NOTICE"), "{stderr}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let tables = runtime.block_on(schema.count(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() \
         AND table_name IN ('inbox', 'inbox_payload', 'delivery', 'delivery_attempt', 'object_version')",
    ));
    assert_eq!(tables, 5);
    let stats = hookinbox(&["stats", "--json"], &config_path);
    let stderr = String::from_utf8_lossy(&stats.stderr);
    assert!(!stderr.contains("NOTICE"), "{stderr}");
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats["total"], 0);

    // A password in the URL: `config check` and errors show the URL without it.
    let secret = "pw-that-must-not-appear";
    let with_password = postgres_url().replacen(
        "postgres://postgres@",
        &format!("postgres://postgres:{secret}@"),
        1,
    );
    assert_ne!(
        with_password,
        postgres_url(),
        "the test URL has the user@ form"
    );
    let text = TestConfig::new(Path::new("unused.db"))
        .storage_url(&with_password)
        .storage(&format!("schema = \"{}\"", schema.name))
        .to_string();
    std::fs::write(&config_path, text).unwrap();
    let checked = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["config", "check", "--config"])
        .arg(&config_path)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let printed = String::from_utf8_lossy(&checked.stdout);
    assert!(printed.contains("postgres://"), "{printed}");
    assert!(!printed.contains(secret), "{printed}");

    // Both a URL password and password_env: refused, naming the field.
    let text = TestConfig::new(Path::new("unused.db"))
        .storage_url(&with_password)
        .storage("password_env = \"PGPASSWORD\"")
        .to_string();
    std::fs::write(&config_path, text).unwrap();
    let refused = hookinbox(&["migrate"], &config_path);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("storage.url"), "{stderr}");
    assert!(!stderr.contains(secret), "{stderr}");
}

#[test]
fn an_unreachable_database_stops_start_up_with_one_line_and_no_password() {
    let port = ReservedPort::new();
    let secret = "pw-unreachable";
    let url = format!("postgres://hookinbox:{secret}@{}/hookinbox", port.addr());
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(
        &config_path,
        TestConfig::new(Path::new("unused.db"))
            .storage_url(&url)
            .storage("connect_timeout = \"1s\"")
            .to_string(),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config_path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(started.elapsed() < Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error_lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(error_lines.len(), 1, "{stderr}");
    assert!(error_lines[0].contains("storage.url"), "{stderr}");
    assert!(
        error_lines[0].contains(&port.addr().to_string()),
        "{stderr}"
    );
    assert!(!stderr.contains(secret), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing announced");
}

/// A database that was never created stops start-up with a line that
/// names it and the command that creates it, not the driver's "db error";
/// the URL's password appears nowhere.
#[test]
fn a_missing_database_is_named_with_the_command_that_creates_it() {
    let secret = "pw-missing-database";
    let database = format!(
        "hbx_missing_{}",
        &uuid::Uuid::now_v7().simple().to_string()[16..]
    );
    let server = postgres_url();
    let (server, _) = server.rsplit_once('/').expect("a URL ending in /DATABASE");
    let url = format!("{server}/{database}").replacen(
        "postgres://postgres@",
        &format!("postgres://postgres:{secret}@"),
        1,
    );
    assert!(url.contains(secret), "the test URL has the user@ form");
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(
        &config_path,
        TestConfig::new(Path::new("unused.db"))
            .storage_url(&url)
            .to_string(),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config_path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("database \"{database}\" does not exist")),
        "{stderr}"
    );
    assert!(
        stderr.contains("create it with `createdb -h ")
            && stderr.contains(&format!("-O postgres {database}`")),
        "{stderr}"
    );
    assert!(!stderr.contains(secret), "{stderr}");
}

/// With a key, PostgreSQL holds neither the body nor the audit headers in
/// the clear, the operator's `events show --payload` opens them, and
/// `keys rewrap` moves them to a new active key while the old one is
/// still listed; after it, the old key can go.
#[tokio::test]
async fn on_postgres_bodies_and_headers_are_sealed_and_rewrapped() {
    use base64::Engine;
    let key = |id: &str, byte: u8| {
        let value = base64::engine::general_purpose::STANDARD.encode([byte; 32]);
        format!("[[encryption.key]]\nid = \"{id}\"\nvalue = \"{value}\"\n")
    };
    let schema = PgSchema::new();
    let dir = tempfile::tempdir().unwrap();
    let unused = dir.path().join("unused.db");
    let marker = "PGMARKER-5d1c-not-in-the-clear";
    let server = Server::start(
        dir.path(),
        &schema
            .config(TestConfig::new(&unused).encryption(&key("k1", 1)))
            .to_string(),
    );
    let body = format!(r#"{{"id":"pg-sealed","type":"payment.succeeded","note":"{marker}"}}"#);
    let event = lab_signed(body.clone(), now()).with("x-audit-marker", marker);
    let answer = post(&client(), &server.url("/hooks/lab"), &event).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    drop(server);

    let clear = schema
        .count(&format!(
            "SELECT count(*) FROM inbox i JOIN inbox_payload p ON p.inbox_id = i.id \
             WHERE position('{marker}'::bytea IN p.payload) > 0 \
                OR position('{marker}' IN i.audit_headers) > 0"
        ))
        .await;
    assert_eq!(clear, 0, "the marker is stored in the clear");
    assert_eq!(
        schema
            .count("SELECT count(*) FROM inbox WHERE payload_key_id = 'k1'")
            .await,
        1
    );

    let both = dir.path().join("both.toml");
    let both_keys = format!(
        "[encryption]\nactive = \"k2\"\n{}{}",
        key("k1", 1),
        key("k2", 2)
    );
    std::fs::write(
        &both,
        schema
            .config(TestConfig::new(&unused).encryption(&both_keys))
            .to_string(),
    )
    .unwrap();
    let out = hookinbox(&["keys", "rewrap"], &both);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("rewrapped 1 records to key k2"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        schema
            .count("SELECT count(*) FROM inbox WHERE payload_key_id = 'k2'")
            .await,
        1
    );

    let only_k2 = dir.path().join("k2.toml");
    std::fs::write(
        &only_k2,
        schema
            .config(TestConfig::new(&unused).encryption(&key("k2", 2)))
            .to_string(),
    )
    .unwrap();
    let out = hookinbox(&["events", "show", &id, "--payload"], &only_k2);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&body));
}
