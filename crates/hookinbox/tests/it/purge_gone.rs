//! Purge means gone (docs/architecture.md §6), through the real binary:
//! after `keys rewrap` and `purge` (retention off), the payload log holds
//! little more than the live bodies, the old-key segments and a crashed
//! writer's empty one gone; and in plaintext, a marker in purged bodies
//! and purged audit headers is in no file under the data directory after
//! a purge (database, WAL, shared memory, segments), whether `hookinbox
//! purge` or `serve`'s own purge task ran it, while a body still held by a
//! pending delivery stays readable and the server keeps accepting.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use base64::Engine;
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

/// Runs `hookinbox ARGS --config CONFIG` and asserts it succeeded.
fn succeeds(args: &[&str], config: &Path) -> Output {
    let mut args = args.to_vec();
    args.extend(["--config", config.to_str().unwrap()]);
    let out = hookinbox(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    out
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The files under `dir` whose bytes contain `marker`.
fn files_holding(dir: &Path, marker: &str) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|file| {
            // A file may be deleted between the listing and the read.
            std::fs::read(file).is_ok_and(|bytes| {
                bytes
                    .windows(marker.len())
                    .any(|window| window == marker.as_bytes())
            })
        })
        .collect()
}

fn payload_dir(db: &Path) -> PathBuf {
    PathBuf::from(format!("{}-payloads", db.display()))
}

/// Bytes of every segment file of the payload log.
fn segment_bytes(db: &Path) -> u64 {
    files_under(&payload_dir(db))
        .iter()
        .map(|file| std::fs::metadata(file).unwrap().len())
        .sum()
}

/// Bytes the inbox rows reference in the payload log (the live bodies as
/// stored: compressed and sealed), and the length of those bodies as
/// received.
fn live_body_bytes(db: &Path) -> (u64, u64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let (stored, received): (i64, i64) = conn
        .query_row(
            "SELECT coalesce(sum(payload_len), 0), coalesce(sum(payload_raw_len), 0)
             FROM inbox WHERE payload_segment IS NOT NULL",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    (
        u64::try_from(stored).unwrap(),
        u64::try_from(received).unwrap(),
    )
}

fn key_table(id: &str, key: [u8; 32]) -> String {
    let value = base64::engine::general_purpose::STANDARD.encode(key);
    format!("[[encryption.key]]\nid = \"{id}\"\nvalue = \"{value}\"\n")
}

/// Posts `bodies` to `/hooks/{endpoint}`, 16 at a time, each with
/// `user_agent`; their inbox ids.
async fn post_all(
    server: &Server,
    endpoint: &str,
    bodies: Vec<String>,
    user_agent: &str,
) -> Vec<String> {
    let client = client();
    let url = server.url(&format!("/hooks/{endpoint}"));
    let mut ids = Vec::new();
    for chunk in bodies.chunks(16) {
        let answers = futures::future::join_all(chunk.iter().map(|body| {
            let event = lab_signed(body.clone(), now()).with("user-agent", user_agent);
            let (client, url) = (client.clone(), url.clone());
            async move { post(&client, &url, &event).await }
        }))
        .await;
        for answer in answers {
            assert_eq!(answer.status, 200, "{}", text(&answer.body));
            ids.push(answer.json()["id"].as_str().unwrap().to_owned());
        }
    }
    ids
}

/// `events show ID --payload`: the body as the CLI prints it.
fn shown_payload(config: &Path, id: &str) -> String {
    text(&succeeds(&["events", "show", id, "--payload"], config).stdout)
}

#[tokio::test]
async fn after_a_rewrap_and_a_purge_only_the_live_bodies_are_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let (k1, k2) = (key_table("k1", [1; 32]), key_table("k2", [2; 32]));
    let pad = "x".repeat(900);
    let bodies = (0..1000)
        .map(|n| format!(r#"{{"id":"b-{n}","type":"payment.succeeded","pad":"{pad}"}}"#))
        .collect();
    let server = Server::start(
        dir.path(),
        &TestConfig::new(&db).encryption(&k1).to_string(),
    );
    let ids = post_all(&server, "lab", bodies, "Provider/1.0").await;
    drop(server);

    // k2 active, k1 kept to open the old rows; no [retention] at all. The
    // server's writer gets a segment of its own for the event after the
    // restart.
    let both = format!("[encryption]\nactive = \"k2\"\n{k1}{k2}");
    let server = Server::start(
        dir.path(),
        &TestConfig::new(&db).encryption(&both).to_string(),
    );
    post_all(
        &server,
        "lab",
        vec![r#"{"id":"after-restart","type":"payment.succeeded"}"#.to_owned()],
        "Provider/1.0",
    )
    .await;
    // What a writer killed between creating its segment and writing to it
    // leaves behind.
    let crashed = payload_dir(&db).join("00000900.seg");
    std::fs::write(&crashed, b"").unwrap();

    let config = server.config_path.clone();
    succeeds(&["keys", "rewrap"], &config);
    succeeds(&["purge"], &config);

    let (on_disk, (live, received)) = (segment_bytes(&db), live_body_bytes(&db));
    assert!(received > 1000 * 900, "live bodies: {received} bytes");
    assert!(
        on_disk as f64 <= 1.3 * live as f64,
        "{on_disk} bytes of segments for {live} bytes of live bodies: {:?}",
        files_under(&payload_dir(&db))
    );
    assert!(
        !crashed.exists(),
        "the crashed writer's empty segment is kept"
    );

    // Every event still opens, with only k2 now; the running server goes
    // on accepting.
    for id in [&ids[0], &ids[999]] {
        assert!(shown_payload(&config, id).contains(r#""type":"payment.succeeded""#));
    }
    post_all(
        &server,
        "lab",
        vec![r#"{"id":"after-purge","type":"payment.succeeded"}"#.to_owned()],
        "Provider/1.0",
    )
    .await;
    drop(server);
    std::fs::write(&config, TestConfig::new(&db).encryption(&k2).to_string()).unwrap();
    assert!(shown_payload(&config, &ids[500]).contains(r#""id":"b-500""#));
}

/// How the purge is run in [`a_marker_in_purged_bodies_and_headers_is_in_no_file`].
#[derive(Debug, Clone, Copy)]
enum PurgeBy {
    /// `hookinbox purge`, a process of its own beside the server.
    Command,
    /// `serve`'s purge task, in the process whose writer holds the segment.
    ServeTask,
}

/// Plaintext (`allow_plaintext`, the test config's default). `plain` has
/// no target; `lab` delivers to a target that is never tried (the server
/// runs without workers), so its event keeps its body.
async fn a_marker_in_purged_bodies_and_headers_is_in_no_file(by: PurgeBy) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let db = data.join("inbox.db");
    let interval = match by {
        PurgeBy::Command => "1h",
        PurgeBy::ServeTask => "300ms",
    };
    let config = TestConfig::new(&db)
        .http_target("http://127.0.0.1:9/never", "")
        .endpoint("plain", "lab", "", LAB_SECRET)
        .extra(&format!(
            "\n[retention]\nraw_payload = \"1s\"\npurge_interval = \"{interval}\""
        ))
        .to_string();
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, config).unwrap();
    let server = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);

    let marker = "MARKER-5d1e-purged-means-gone";
    // Under 128 bytes, so stored as received: a compressed body would not
    // show the marker before the purge either, and the scan would prove
    // nothing (docs/architecture.md §6).
    let bodies = (0..20)
        .map(|n| format!(r#"{{"id":"m-{n}","type":"payment.succeeded","note":"{marker}"}}"#))
        .collect();
    post_all(&server, "plain", bodies, &format!("Provider/1.0 {marker}")).await;
    let held = post_all(
        &server,
        "lab",
        vec![r#"{"id":"held","type":"payment.succeeded"}"#.to_owned()],
        "Provider/1.0",
    )
    .await;
    assert!(
        !files_holding(&data, marker).is_empty(),
        "the marker is not on disk before the purge: the scan would prove nothing"
    );

    match by {
        PurgeBy::Command => {
            let due = until(Duration::from_secs(20), || async {
                text(&succeeds(&["purge", "--dry-run"], &config_path).stdout)
                    .starts_with("raw_payloads 20\n")
            })
            .await;
            assert!(due, "the bodies never fell due");
            succeeds(&["purge"], &config_path);
            let found = files_holding(&data, marker);
            assert!(found.is_empty(), "the marker is still in {found:?}");
        }
        PurgeBy::ServeTask => {
            let gone = until(Duration::from_secs(30), || async {
                files_holding(&data, marker).is_empty()
            })
            .await;
            assert!(
                gone,
                "the marker is still in {:?}\n{}",
                files_holding(&data, marker),
                server.logs()
            );
            assert!(
                text(&succeeds(&["purge", "--dry-run"], &config_path).stdout)
                    .starts_with("raw_payloads 0\n")
            );
        }
    }

    assert!(shown_payload(&config_path, &held[0]).contains(r#""id":"held""#));
    // The writer's segment was deleted under it: it moves on, no 503.
    let after = post_all(
        &server,
        "plain",
        vec![r#"{"id":"after","type":"payment.succeeded"}"#.to_owned()],
        "Provider/1.0",
    )
    .await;
    assert!(shown_payload(&config_path, &after[0]).contains(r#""id":"after""#));
}

#[tokio::test]
async fn hookinbox_purge_leaves_no_purged_marker_in_any_file() {
    a_marker_in_purged_bodies_and_headers_is_in_no_file(PurgeBy::Command).await;
}

#[tokio::test]
async fn serves_purge_task_leaves_no_purged_marker_in_any_file() {
    a_marker_in_purged_bodies_and_headers_is_in_no_file(PurgeBy::ServeTask).await;
}
