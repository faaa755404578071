//! Payload segments are never confused (issue #18), against the real
//! binary on SQLite.
//!
//! An outside `hookinbox purge` once stranded new events: it deleted the
//! segment the running server wrote to and the one `keys rewrap` had
//! written; the server's writer then made a new file under the rewrap's
//! number, while its workers still held the deleted file open under that
//! number, read other bytes for the new events ("does not authenticate"),
//! and after their retry budget left them DEAD, the deleted files' space
//! held until a restart. Here the same sequence must end with every new
//! event PROCESSED, its payload served by the admin API, and no deleted
//! segment open in the server.
//!
//! And a body our own storage cannot give back is a storage fault, not the
//! target's: the delivery waits without spending attempts, is counted,
//! and `/readyz` names it, until the body reads again.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use base64::Engine;
use http_body_util::Full;
use support::*;

const TOKEN: &str = "admin-t0ken-for-segment-tests";

fn hookinbox(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .output()
        .expect("run hookinbox")
}

fn key_table(id: &str, byte: u8) -> String {
    let value = base64::engine::general_purpose::STANDARD.encode([byte; 32]);
    format!("[[encryption.key]]\nid = \"{id}\"\nvalue = \"{value}\"\n")
}

/// The `lab` endpoint sealed under `encryption`, delivering to `sink_url`
/// with a budget of 30 attempts (milliseconds apart unless the sink says
/// `Retry-After`), an admin listener, and `more` TOML.
fn config(db: &Path, sink_url: &str, encryption: &str, more: &str) -> String {
    TestConfig::new(db)
        .encryption(encryption)
        .http_target(sink_url, "max_attempts = 30")
        .extra(&format!("{}\n{more}", admin_table(TOKEN)))
        .to_string()
}

/// `GET path` on the admin listener with the token: the status and the
/// body.
async fn admin_get(admin: std::net::SocketAddr, path: &str) -> (u16, String) {
    let request = hyper::Request::get(format!("http://{admin}{path}"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Full::default())
        .unwrap();
    let response = client().request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// The value of the unlabelled counter `name` on `/metrics`.
async fn counter(admin: std::net::SocketAddr, name: &str) -> Option<f64> {
    let (_, text) = admin_get(admin, "/metrics").await;
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

fn segment_files(db: &Path) -> Vec<PathBuf> {
    let dir = PathBuf::from(format!("{}-payloads", db.display()));
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "seg"))
        .collect();
    files.sort();
    files
}

/// The payload segments process `pid` holds open after they were deleted.
fn deleted_segments_open(pid: u32) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .map(|target| target.to_string_lossy().into_owned())
        .filter(|target| target.contains(".seg") && target.ends_with(" (deleted)"))
        .collect()
}

fn statuses_of(db: &Path, prefix: &str) -> Vec<String> {
    inbox_status(db)
        .into_iter()
        .filter(|(event_id, _)| event_id.starts_with(prefix))
        .map(|(_, status)| status)
        .collect()
}

/// Whether all `count` events whose id starts with `prefix` are PROCESSED.
fn all_processed(db: &Path, prefix: &str, count: usize) -> bool {
    let statuses = statuses_of(db, prefix);
    statuses.len() == count && statuses.iter().all(|status| status == "PROCESSED")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_events_after_an_outside_purge_are_delivered_and_served() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let sink = Sink::start().await;
    let client = client();
    let (k1, k2) = (key_table("k1", 1), key_table("k2", 2));

    // Events sealed under k1, not delivered yet. (Its log apart: the
    // admin address is read from the log of the server started next.)
    let first = tempfile::tempdir().unwrap();
    let server = Server::start_with_args(
        first.path(),
        &{
            let path = dir.path().join("k1.toml");
            std::fs::write(&path, config(&db, &sink.url(), &k1, "")).unwrap();
            path
        },
        &["--no-workers"],
    );
    for n in 0..10 {
        let answer = post(
            &client,
            &server.url("/hooks/lab"),
            &lab_event(&format!("k1-{n}")),
        )
        .await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
    }
    drop(server);

    // Rotated: k2 seals, k1 still opens. The sink answers 503 with
    // Retry-After for now, so every delivery reads its body again after
    // the rewrap below, from where the rewrap put it.
    sink.respond_with(|_, _| (503, vec![("retry-after".into(), "1".into())]));
    let both = format!("[encryption]\nactive = \"k2\"\n{k1}{k2}");
    let server = Server::start(dir.path(), &config(&db, &sink.url(), &both, ""));
    let admin = server.admin_address().await;
    for n in 0..10 {
        let answer = post(
            &client,
            &server.url("/hooks/lab"),
            &lab_event(&format!("k2-{n}")),
        )
        .await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
    }
    let last_accepted = Instant::now();
    let serve_config = server.config_path.to_str().unwrap().to_owned();
    let rewrap = hookinbox(&["keys", "rewrap", "--config", &serve_config]);
    assert!(
        rewrap.status.success(),
        "{}",
        String::from_utf8_lossy(&rewrap.stderr)
    );
    sink.respond_with(|_, _| (200, Vec::new()));
    assert!(
        until(Duration::from_secs(30), || async {
            all_processed(&db, "k1-", 10) && all_processed(&db, "k2-", 10)
        })
        .await,
        "the first 20 events were not delivered: {:?}\n{}",
        inbox_status(&db),
        server.logs()
    );

    // From another process, with a rule that drops every body by now:
    // every segment goes, the one the server writes to included.
    let purge_config = dir.path().join("purge.toml");
    std::fs::write(
        &purge_config,
        config(&db, &sink.url(), &both, "[retention]\nraw_payload = \"1s\""),
    )
    .unwrap();
    // Retention counts from arrival: the last event must be past 1 s.
    tokio::time::sleep(Duration::from_millis(1_500).saturating_sub(last_accepted.elapsed())).await;
    let purge = hookinbox(&["purge", "--config", purge_config.to_str().unwrap()]);
    let purge_log = String::from_utf8_lossy(&purge.stderr).into_owned();
    assert!(purge.status.success(), "{purge_log}");
    assert!(purge_log.contains("purged 20 raw payloads"), "{purge_log}");
    assert_eq!(segment_files(&db), Vec::<PathBuf>::new(), "{purge_log}");

    // New events, sent as a provider does: retried while answered 503
    // (the writer finds its segment gone), until 200.
    let mut accepted = Vec::new();
    for n in 0..20 {
        let event_id = format!("after-{n}");
        let answer = retry_until_accepted(
            &client,
            &server.url("/hooks/lab"),
            &lab_event(&event_id),
            Duration::from_secs(30),
        )
        .await;
        accepted.push((event_id, answer.json()["id"].as_str().unwrap().to_owned()));
    }
    assert!(
        until(Duration::from_secs(30), || async {
            all_processed(&db, "after-", 20)
        })
        .await,
        "events accepted after the purge were not all delivered: {:?}\n{}",
        statuses_of(&db, "after-"),
        server.logs()
    );
    let delivered: Vec<String> = sink
        .accepted()
        .iter()
        .map(|received| String::from_utf8_lossy(&received.body).into_owned())
        .collect();
    for (event_id, inbox_id) in &accepted {
        let body = format!(r#""id":"{event_id}""#);
        assert!(
            delivered.iter().any(|sent| sent.contains(&body)),
            "{event_id} never reached the sink"
        );
        let (status, event) =
            admin_get(admin, &format!("/admin/events/{inbox_id}?payload=true")).await;
        assert_eq!(status, 200, "{event_id}: {event}");
        let event: serde_json::Value = serde_json::from_str(&event).unwrap();
        let payload = base64::engine::general_purpose::STANDARD
            .decode(event["payload_base64"].as_str().unwrap_or_default())
            .unwrap();
        assert!(
            String::from_utf8_lossy(&payload).contains(&body),
            "{event_id}: {event}"
        );
    }

    // The deleted segments' space is given back without a restart.
    let pid = server.pid();
    assert!(
        eventually(Duration::from_secs(10), || deleted_segments_open(pid)
            .is_empty())
        .await,
        "still open after the purge: {:?}",
        deleted_segments_open(pid)
    );
}

/// The one delivery row: (status, attempts, attempt rows).
fn the_delivery(db: &Path) -> (String, i64, i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT status, attempts, (SELECT count(*) FROM delivery_attempt) FROM delivery",
        [],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )
    .unwrap()
}

/// Flips the bits of the byte at `offset` of `path`.
fn flip_byte(path: &Path, offset: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset] ^= 0xff;
    std::fs::write(path, bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_read_back_waits_without_spending_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let sink = Sink::start().await;
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(
        &config_path,
        config(&db, &sink.url(), &key_table("k1", 1), ""),
    )
    .unwrap();

    // Its log apart: the admin address is read from the next server's.
    let first = tempfile::tempdir().unwrap();
    let server = Server::start_with_args(first.path(), &config_path, &["--no-workers"]);
    let answer = post(&client(), &server.url("/hooks/lab"), &lab_event("flipped")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    drop(server);
    // A changed byte in the middle of the sealed body: it no longer
    // authenticates.
    let segment = segment_files(&db).pop().expect("a segment");
    let middle = std::fs::metadata(&segment).unwrap().len() as usize / 2;
    flip_byte(&segment, middle);

    let server = Server::start_with(dir.path(), &config_path);
    let admin = server.admin_address().await;
    // Two faults seen: the first deferral ran its course (5 to 10 s), long
    // past what 30 target attempts take (milliseconds apart).
    assert!(
        until(Duration::from_secs(40), || async {
            counter(admin, "hookinbox_storage_read_faults_total")
                .await
                .is_some_and(|faults| faults >= 2.0)
        })
        .await,
        "no storage read fault counted\n{}",
        server.logs()
    );
    // Waiting (or leased again, its deferral counted before it commits),
    // with no attempt spent or recorded.
    let (status, attempts, attempt_rows) = the_delivery(&db);
    assert!(status == "PENDING" || status == "LEASED", "{status}");
    assert_eq!((attempts, attempt_rows), (0, 0));
    assert_eq!(inbox_status(&db)["flipped"], "ACCEPTED");
    assert!(sink.received().is_empty(), "nothing was sent");
    let (status, readiness) = admin_get(admin, "/readyz").await;
    assert_eq!(status, 200, "ingress still works: {readiness}");
    let readiness: serde_json::Value = serde_json::from_str(&readiness).unwrap();
    assert_eq!(readiness["degraded"], serde_json::json!(["storage_reads"]));
    let logs = server.logs();
    assert!(
        logs.contains("Storage read fault") && logs.contains("does not authenticate"),
        "{logs}"
    );

    // The byte restored (a disk repaired, a key put back): delivered with
    // the target's budget whole.
    flip_byte(&segment, middle);
    assert!(
        until(Duration::from_secs(30), || async {
            inbox_status(&db)["flipped"] == "PROCESSED"
        })
        .await,
        "{}",
        server.logs()
    );
    assert_eq!(the_delivery(&db), ("DELIVERED".to_owned(), 1, 1));
}
