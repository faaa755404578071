//! Keys are checked before serving (#18; docs/architecture.md §6), through
//! the real binary: a restart under another key for a known key id, or
//! under a ring that lost a key rows are sealed under, stops before
//! serving and names the key id, and leaves the pending deliveries as they
//! were, to be delivered once the right key is back; a deleted
//! `create_if_missing` key file is not replaced by a new key while the
//! database holds data; `keys check` says the same offline; a SIGHUP
//! never swaps the encryption ring, so no ring enters without the check.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use support::*;

/// The bytes of key `k1` first, and other bytes under the same id.
const K1: [u8; 32] = [0x11; 32];
const K1_OTHER: [u8; 32] = [0x99; 32];
const K2: [u8; 32] = [0x22; 32];

fn base64(key: [u8; 32]) -> String {
    base64::engine::general_purpose::STANDARD.encode(key)
}

/// An `[encryption]` section with `active` and the keys.
fn ring(active: &str, keys: &[(&str, [u8; 32])]) -> String {
    let mut toml = format!("[encryption]\nactive = \"{active}\"\n");
    for (id, key) in keys {
        toml.push_str(&format!(
            "[[encryption.key]]\nid = \"{id}\"\nvalue = \"{}\"\n",
            base64(*key)
        ));
    }
    toml
}

fn write_config(dir: &Path, name: &str, config: &TestConfig) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// Runs `hookinbox serve` on a config that must be refused: its exit code
/// and stderr. One that starts instead (as every one did before the check)
/// is killed after a minute and reported as `None`, so the test fails
/// rather than hangs.
fn serve_refused_within(config: &Path) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookinbox");
    let deadline = Instant::now() + Duration::from_secs(60);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (code, stderr)
}

fn hookinbox(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .output()
        .expect("run hookinbox")
}

fn keys_check(config: &Path, json: bool) -> Output {
    let mut args = vec!["keys", "check", "--config", config.to_str().unwrap()];
    if json {
        args.push("--json");
    }
    hookinbox(&args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts that `output` names key `key_id` and shows no key's bytes.
fn names_key_and_no_key_bytes(output: &str, key_id: &str) {
    assert!(output.contains(&format!("`{key_id}`")), "{output}");
    for key in [K1, K1_OTHER, K2] {
        assert!(!output.contains(&base64(key)), "a key is printed: {output}");
    }
}

/// Accepts `count` events on `server`.
async fn accept(server: &Server, count: usize) {
    for n in 0..count {
        accept_one(server, &format!("e-{n}")).await;
    }
}

/// Accepts the event `event_id` on `server`; its inbox id.
async fn accept_one(server: &Server, event_id: &str) -> String {
    let answer = post(&client(), &server.url("/hooks/lab"), &lab_event(event_id)).await;
    assert_eq!(answer.status, 200, "{}", text(&answer.body));
    answer.json()["id"].as_str().unwrap().to_owned()
}

on_both_backends!(a_restart_under_another_key_for_a_known_id_is_refused_and_nothing_goes_dead);

async fn a_restart_under_another_key_for_a_known_id_is_refused_and_nothing_goes_dead(
    backend: Backend,
) {
    let storage = Storage::new(backend);
    let dir = storage.dir.path();
    // The target is down: the deliveries stay PENDING.
    let port = ReservedPort::new();
    let target = |config: TestConfig| config.http_target(&port.url(), "max_attempts = 1000");
    let right = write_config(
        dir,
        "right.toml",
        &target(storage.config().encryption(&ring("k1", &[("k1", K1)]))),
    );
    let wrong = write_config(
        dir,
        "wrong.toml",
        &target(
            storage
                .config()
                .encryption(&ring("k1", &[("k1", K1_OTHER)])),
        ),
    );
    let server = Server::start_with_args(dir, &right, &["--no-workers"]);
    accept(&server, 3).await;
    drop(server);

    let (code, stderr) = serve_refused_within(&wrong);
    assert_eq!(code, Some(2), "serve must refuse the wrong key:\n{stderr}");
    names_key_and_no_key_bytes(&stderr, "k1");
    assert!(stderr.contains("does not fit the database"), "{stderr}");

    let deliveries = storage.deliveries().await;
    assert_eq!(deliveries.len(), 3, "{deliveries:?}");
    for delivery in &deliveries {
        assert_eq!(delivery.status, "PENDING", "{deliveries:?}");
        assert_eq!(delivery.attempts, 0, "{deliveries:?}");
    }

    // The right key again, the target up: everything is delivered.
    let sink = Sink::start_on(port).await;
    let _server = Server::start_with(dir, &right);
    assert!(
        until(Duration::from_secs(60), || async {
            storage
                .deliveries()
                .await
                .iter()
                .all(|delivery| delivery.status == "DELIVERED")
        })
        .await,
        "{:?}",
        storage.deliveries().await
    );
    assert_eq!(sink.accepted().len(), 3);
}

#[tokio::test]
async fn a_ring_without_a_key_that_sealed_rows_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let k1 = write_config(
        dir.path(),
        "k1.toml",
        &TestConfig::new(&db).encryption(&ring("k1", &[("k1", K1)])),
    );
    let k2_only = write_config(
        dir.path(),
        "k2.toml",
        &TestConfig::new(&db).encryption(&ring("k2", &[("k2", K2)])),
    );
    let plaintext = write_config(dir.path(), "plain.toml", &TestConfig::new(&db));
    let server = Server::start_with(dir.path(), &k1);
    accept(&server, 2).await;
    drop(server);

    for config in [&k2_only, &plaintext] {
        let (code, stderr) = serve_refused_within(config);
        assert_eq!(code, Some(2), "serve must refuse:\n{stderr}");
        names_key_and_no_key_bytes(&stderr, "k1");
        assert!(stderr.contains("not in the key ring"), "{stderr}");
    }
    // Every command that opens the store refuses too, before writing.
    let rewrap = hookinbox(&["keys", "rewrap", "--config", k2_only.to_str().unwrap()]);
    assert_eq!(rewrap.status.code(), Some(2));
    names_key_and_no_key_bytes(&text(&rewrap.stderr), "k1");
    let listed = hookinbox(&["events", "list", "--config", k2_only.to_str().unwrap()]);
    assert_eq!(listed.status.code(), Some(2));
    names_key_and_no_key_bytes(&text(&listed.stderr), "k1");
}

#[tokio::test]
async fn a_deleted_development_key_file_is_not_replaced_while_the_database_holds_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let key_file = dir.path().join("dev.key");
    let config = write_config(
        dir.path(),
        "hookinbox.toml",
        &TestConfig::new(&db).encryption(&format!(
            "[[encryption.key]]\nid = \"dev-1\"\nvalue_file = \"{}\"\ncreate_if_missing = true\n",
            key_file.display()
        )),
    );
    // An empty database: the key is made.
    let server = Server::start_with(dir.path(), &config);
    assert!(key_file.exists());
    accept(&server, 1).await;
    drop(server);

    std::fs::remove_file(&key_file).unwrap();
    let (code, stderr) = serve_refused_within(&config);
    assert_eq!(code, Some(2), "serve must refuse:\n{stderr}");
    names_key_and_no_key_bytes(&stderr, "dev-1");
    assert!(stderr.contains(&key_file.display().to_string()), "{stderr}");
    assert!(!key_file.exists(), "a new key file was made");
    let check = keys_check(&config, false);
    assert_eq!(check.status.code(), Some(2), "{}", text(&check.stderr));
    assert!(!key_file.exists(), "keys check made a key file");
}

#[tokio::test]
async fn keys_check_says_offline_what_serve_would() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let config = |name: &str, ring: String| {
        write_config(dir.path(), name, &TestConfig::new(&db).encryption(&ring))
    };
    let right = config("right.toml", ring("k1", &[("k1", K1)]));
    let wrong = config("wrong.toml", ring("k1", &[("k1", K1_OTHER)]));
    let lost = config("lost.toml", ring("k2", &[("k2", K2)]));
    let rotated = config("rotated.toml", ring("k2", &[("k2", K2), ("k1", K1)]));
    let server = Server::start_with(dir.path(), &right);
    accept(&server, 1).await;
    drop(server);

    let ok = keys_check(&right, false);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let stdout = text(&ok.stdout);
    assert!(stdout.contains("key k1: verified"), "{stdout}");
    assert!(stdout.contains("rows are sealed under: k1"), "{stdout}");

    let refused = keys_check(&wrong, false);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    names_key_and_no_key_bytes(&text(&refused.stdout), "k1");
    let json: serde_json::Value = serde_json::from_slice(&keys_check(&wrong, true).stdout).unwrap();
    assert_eq!(json["ok"], false, "{json}");
    assert_eq!(json["mismatches"][0]["problem"], "wrong_key", "{json}");
    assert_eq!(json["mismatches"][0]["key_id"], "k1", "{json}");

    let missing = keys_check(&lost, true);
    assert_eq!(missing.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&missing.stdout).unwrap();
    assert_eq!(json["mismatches"][0]["problem"], "missing_key", "{json}");
    assert_eq!(json["mismatches"][0]["key_id"], "k1", "{json}");

    // A new key beside the old one: fits; k2 has no check value until a
    // start records it, and `keys check` records nothing.
    for _ in 0..2 {
        let added = keys_check(&rotated, true);
        assert_eq!(added.status.code(), Some(0), "{}", text(&added.stderr));
        let json: serde_json::Value = serde_json::from_slice(&added.stdout).unwrap();
        assert_eq!(json["ok"], true, "{json}");
        assert_eq!(json["verified"], serde_json::json!(["k1"]), "{json}");
        assert_eq!(json["unrecorded"], serde_json::json!(["k2"]), "{json}");
    }
}

#[tokio::test]
async fn a_sighup_never_swaps_the_encryption_ring() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let key_file = dir.path().join("k1.key");
    std::fs::write(&key_file, base64(K1)).unwrap();
    let config = write_config(
        dir.path(),
        "hookinbox.toml",
        &TestConfig::new(&db).encryption(&format!(
            "[[encryption.key]]\nid = \"k1\"\nvalue_file = \"{}\"\n",
            key_file.display()
        )),
    );
    let server = Server::start_with(dir.path(), &config);
    let before = accept_one(&server, "before").await;
    // Another key in the file, then a reload: the running ring stays.
    std::fs::write(&key_file, base64(K1_OTHER)).unwrap();
    sighup(&server);
    logged(&server, "Secrets reloaded.", 1).await;
    let after = accept_one(&server, "after").await;
    drop(server);

    // Both rows are under the key the check recorded: with it back in the
    // file, the check passes and both bodies open.
    std::fs::write(&key_file, base64(K1)).unwrap();
    let check = keys_check(&config, false);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stdout));
    for (id, event_id) in [(&before, "before"), (&after, "after")] {
        let shown = hookinbox(&[
            "events",
            "show",
            id,
            "--payload",
            "--config",
            config.to_str().unwrap(),
        ]);
        assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
        assert!(
            text(&shown.stdout).contains(event_id),
            "{}",
            text(&shown.stdout)
        );
    }
}
