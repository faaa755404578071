//! Bodies are compressed before they are sealed (docs/architecture.md §6),
//! through the real binary on both backends: events whose JSON compresses
//! and events too small to try are acknowledged, survive `kill -9`, and
//! come back byte for byte with their length as received; on SQLite the
//! payload log holds a fraction of the bytes that were sent.

use crate::support;

use std::path::Path;

use base64::Engine;
use support::*;

on_both_backends!(compressed_sealed_bodies_survive_kill_9_byte_for_byte);

/// Webhook-like JSON of about `len` bytes: repeated keys and URLs, as a
/// provider's events have, with values that differ per line.
fn webhook_json(id: &str, len: usize) -> String {
    let mut body = format!(r#"{{"id":"{id}","type":"invoice.paid","lines":["#);
    let mut n = 0;
    while body.len() + 2 < len {
        if n > 0 {
            body.push(',');
        }
        body.push_str(&format!(
            r#"{{"id":"li_{id}_{n}","object":"line_item","amount":{},"currency":"eur","url":"https://api.example.com/v1/invoices/{id}/lines/{n}","metadata":{{}}}}"#,
            1900 + n * 7
        ));
        n += 1;
    }
    body.push_str("]}");
    body
}

/// Bytes of every payload segment of the SQLite store at `db`.
fn payload_log_bytes(db: &Path) -> u64 {
    let dir = std::path::PathBuf::from(format!("{}-payloads", db.display()));
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok()?.metadata().ok())
                .map(|meta| meta.len())
                .sum()
        })
        .unwrap_or(0)
}

async fn compressed_sealed_bodies_survive_kill_9_byte_for_byte(backend: Backend) {
    let storage = Storage::new(backend);
    let config = storage.config().encrypted().to_string();
    let mut server = Server::start(storage.dir.path(), &config);
    let client = client();
    let url = server.url("/hooks/lab");
    let mut bodies = vec![
        (
            "tiny".to_owned(),
            r#"{"id":"tiny","type":"invoice.paid"}"#.to_owned(),
        ),
        ("large".to_owned(), webhook_json("large", 900_000)),
    ];
    for n in 0..20 {
        let id = format!("c-{n}");
        let body = webhook_json(&id, 2_000 + n * 1_500);
        bodies.push((id, body));
    }
    let mut acked = Vec::new();
    for (event_id, body) in &bodies {
        let answer = post(&client, &url, &lab_signed(body.clone(), now())).await;
        assert_eq!(answer.status, 200, "{event_id}: {:?}", answer.body);
        let inbox_id = answer.json()["id"].as_str().unwrap().to_owned();
        acked.push((inbox_id, body.clone()));
    }
    server.kill9();

    let sent: usize = bodies.iter().map(|(_, body)| body.len()).sum();
    if let Some(db) = storage.sqlite_file() {
        let on_disk = payload_log_bytes(db);
        assert!(
            on_disk * 4 < sent as u64,
            "{on_disk} bytes of segments for {sent} bytes of bodies"
        );
    }
    // Opened again after the kill (with the key), every body reads back
    // exactly, as `events show` gives it to an operator.
    for (inbox_id, body) in &acked {
        let shown = shown_event(&server.config_path, inbox_id);
        let payload = base64::engine::general_purpose::STANDARD
            .decode(shown["payload_base64"].as_str().unwrap_or_default())
            .unwrap();
        assert!(payload == body.as_bytes(), "{inbox_id}: not the body sent");
        assert_eq!(shown["payload_bytes"], body.len(), "{inbox_id}");
    }
}

/// `hookinbox events show ID --payload --json`.
fn shown_event(config: &Path, inbox_id: &str) -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args([
            "events",
            "show",
            inbox_id,
            "--payload",
            "--json",
            "--config",
        ])
        .arg(config)
        .output()
        .expect("run hookinbox");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
