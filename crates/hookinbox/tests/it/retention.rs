//! Retention through the real binary: `purge --dry-run` counts what is
//! due, `purge` drops bodies past `raw_payload` while the rows stay, an
//! event whose delivery is pending keeps its body whatever its age, and
//! `serve`'s purge task does the same every `purge_interval`, logged and
//! counted.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use support::*;

fn hookinbox(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .output()
        .expect("run hookinbox")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `events show ID --json --payload`: the event, `payload_base64` null
/// once its body is purged.
fn shown(config: &Path, id: &str) -> serde_json::Value {
    let out = hookinbox(&[
        "events",
        "show",
        id,
        "--json",
        "--payload",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn dry_run(config: &Path) -> String {
    let out = hookinbox(&["purge", "--dry-run", "--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// `lab` delivers to a target (held PENDING: the server runs without
/// workers); `plain` has no target. Bodies are kept one second.
fn retention_config(db: &Path, retention: &str) -> String {
    TestConfig::new(db)
        .encrypted()
        .http_target("http://127.0.0.1:9/never", "")
        .endpoint("plain", "lab", "", LAB_SECRET)
        .extra(&format!("\n[retention]\n{retention}"))
        .to_string()
}

#[tokio::test]
async fn purge_drops_old_bodies_keeps_rows_and_never_a_pending_event() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(
        &config_path,
        retention_config(
            &db,
            "raw_payload = \"1s\"\npurge_interval = \"1h\"\nbatch = 1",
        ),
    )
    .unwrap();
    let server = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);
    let client = client();
    let mut ids = Vec::new();
    for (endpoint, name) in [("plain", "p-1"), ("plain", "p-2"), ("lab", "held-1")] {
        let answer = post(
            &client,
            &server.url(&format!("/hooks/{endpoint}")),
            &lab_event(name),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", text(&answer.body));
        ids.push(answer.json()["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        dry_run(&config_path),
        "raw_payloads 0\nevents 0\ndead_deliveries 0\n"
    );
    // Past the one second the bodies are kept (the clock is the real one).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        dry_run(&config_path),
        "raw_payloads 2\nevents 0\ndead_deliveries 0\n"
    );

    // While serve runs; batches of one, so the loop takes two.
    let out = hookinbox(&["purge", "--config", config_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("purged 2 raw payloads, 0 events, 0 dead deliveries; ")),
        "{stderr}"
    );
    assert_eq!(
        dry_run(&config_path),
        "raw_payloads 0\nevents 0\ndead_deliveries 0\n"
    );

    // The rows stay; only the old bodies of events with nothing pending went.
    assert_eq!(inbox_rows(&db).len(), 3);
    for id in &ids[..2] {
        let event = shown(&config_path, id);
        assert!(event["payload_base64"].is_null(), "{event:#}");
    }
    let held = shown(&config_path, &ids[2]);
    assert!(held["payload_base64"].is_string(), "{held:#}");
    assert_eq!(deliveries(&db), [("PENDING".to_owned(), None)]);
}

#[tokio::test]
async fn serve_purges_every_interval_logged_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let config = format!(
        "{}\n[admin]\nlisten = \"127.0.0.1:0\"\n",
        retention_config(&db, "raw_payload = \"1s\"\npurge_interval = \"300ms\"")
    );
    let server = Server::start(dir.path(), &config);
    let answer = post(&client(), &server.url("/hooks/plain"), &lab_event("old")).await;
    assert_eq!(answer.status, 200);
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    logged(&server, "Purged under the retention rules.", 1).await;
    let line = server
        .logs()
        .lines()
        .find(|l| l.contains("Purged under the retention rules."))
        .unwrap()
        .to_owned();
    assert!(line.contains("raw_payloads=1"), "{line}");
    let admin = server.admin_address().await;
    assert_eq!(
        metric_value(admin, "hookinbox_purged_total{kind=\"raw_payloads\"}").await,
        Some(1.0)
    );
    assert!(shown(&server.config_path, &id)["payload_base64"].is_null());
    assert_eq!(inbox_rows(&db).len(), 1);
}
