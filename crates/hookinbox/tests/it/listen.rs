//! `hookinbox listen` end to end, on SQLite and PostgreSQL (their streams
//! are ordered differently, `hookinbox-store/src/event_stream.rs`): 500
//! events accepted while `listen` runs, `listen` killed with -9 after 200
//! forwards and started again, the local app down for 5 s in the middle.
//! The local app ends with every event, in the order they were accepted,
//! each signed under the local secret; an event is seen twice only where
//! `listen` could not know the app had it (the one in flight at the kill,
//! or at the outage), and then right after itself. A wrong token is
//! refused with a clear error, and the stream never carries a secret.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use http_body_util::{BodyExt, Full};
use support::*;

const TOKEN: &str = "admin-t0ken-for-listen-tests";
const EVENTS: usize = 500;

/// A running `hookinbox listen`.
struct Listen {
    child: Child,
}

impl Listen {
    fn start(dir: &Path, admin: &str, forward: &str, state: &Path, token: &str) -> Listen {
        let child = listen_command(dir, admin, forward, state, token)
            .spawn()
            .expect("spawn hookinbox listen");
        Listen { child }
    }

    /// SIGKILL: the state file is whatever was last renamed into place.
    fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Listen {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn listen_command(dir: &Path, admin: &str, forward: &str, state: &Path, token: &str) -> Command {
    let log = |name: &str| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(name))
            .expect("open a log")
    };
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookinbox"));
    command
        .args(["listen", "--admin", &format!("http://{admin}")])
        .args(["--token-env", "LISTEN_TEST_TOKEN", "--endpoint", "lab"])
        .args(["--forward", forward, "--secret-env", "LISTEN_TEST_SECRET"])
        .arg("--state")
        .arg(state)
        .arg("--json")
        .env("LISTEN_TEST_TOKEN", token)
        .env("LISTEN_TEST_SECRET", TARGET_SECRET)
        .stdin(Stdio::null())
        .stdout(log("listen.out"))
        .stderr(log("listen.err"));
    command
}

/// The Idempotency-Keys the app received, in arrival order.
fn keys(app: &LocalApp) -> Vec<String> {
    app.received()
        .iter()
        .map(|r| r.header("idempotency-key"))
        .collect()
}

fn distinct(keys: &[String]) -> usize {
    keys.iter().collect::<std::collections::HashSet<_>>().len()
}

async fn wait_for_distinct(app: &LocalApp, count: usize, dir: &Path) {
    assert!(
        until(Duration::from_secs(120), || async {
            distinct(&keys(app)) >= count
        })
        .await,
        "the app got {} of {count} events\nlisten: {}",
        distinct(&keys(app)),
        std::fs::read_to_string(dir.join("listen.err")).unwrap_or_default()
    );
}

async fn forwards_every_event_once_in_order_through_a_kill_and_an_outage(backend: Backend) {
    let storage = Storage::new(backend);
    let dir = storage.dir.path().to_owned();
    let config = storage.config().extra(&admin_table(TOKEN));
    let server = Server::start(&dir, &config.to_string());
    let admin = server.admin_address().await.to_string();
    let app = LocalApp::start().await;
    let state = dir.join("state").join("listen-lab.json");

    let mut listen = Listen::start(&dir, &admin, &app.url(), &state, TOKEN);
    // The stream has started (its `ready` cursor is saved): every event
    // accepted from now on is the app's to receive.
    assert!(
        until(Duration::from_secs(30), || async { state.exists() }).await,
        "listen started: {}",
        std::fs::read_to_string(dir.join("listen.err")).unwrap_or_default()
    );

    let ingress = server.url("/hooks/lab");
    let sender = tokio::spawn(async move {
        let client = client();
        let mut accepted = Vec::new();
        for n in 0..EVENTS {
            let answer = post(&client, &ingress, &lab_event(&format!("evt_{n:03}"))).await;
            assert_eq!(answer.status, 200, "{:?}", answer.body);
            accepted.push(answer.json()["id"].as_str().unwrap().to_owned());
        }
        accepted
    });

    wait_for_distinct(&app, 200, &dir).await;
    listen.kill9();
    let mut listen = Listen::start(&dir, &admin, &app.url(), &state, TOKEN);

    wait_for_distinct(&app, 300, &dir).await;
    app.stop().await;
    // The deliberate outage: the app is down for 5 s.
    tokio::time::sleep(Duration::from_secs(5)).await;
    app.start_again().await;

    let accepted = sender.await.expect("every event accepted");
    wait_for_distinct(&app, EVENTS, &dir).await;
    // The app has the last event once its request arrived; `listen` logs
    // it acknowledged only after the app's answer reached it. Killed in
    // between, nobody would send it again (no restart follows), so wait
    // for the lines before the kill.
    assert!(
        until(Duration::from_secs(30), || async {
            acknowledged(&dir).len() >= EVENTS
        })
        .await,
        "listen logged {} of {EVENTS} events acknowledged",
        acknowledged(&dir).len()
    );
    listen.kill9();

    let received = keys(&app);
    let mut collapsed = received.clone();
    collapsed.dedup();
    assert_eq!(
        collapsed, accepted,
        "each event in the order it was accepted, a repeat only right after itself"
    );
    let repeats = received.len() - collapsed.len();
    assert!(
        repeats <= 2,
        "only the events in flight at the kill and at the outage may come twice: {repeats}"
    );
    eprintln!("listen: {EVENTS} events, {repeats} sent again after the kill or the outage");

    // What the app got verifies under the local secret, and is the body
    // the provider sent.
    let key = base64::engine::general_purpose::STANDARD
        .decode(TARGET_SECRET.trim_start_matches("whsec_"))
        .unwrap();
    for (n, request) in app.received().iter().enumerate() {
        let id = request.header("webhook-id");
        let timestamp: i64 = request.header("webhook-timestamp").parse().unwrap();
        let expected =
            hookinbox_verify::providers::standard::sign_v1(&key, &id, timestamp, &request.body);
        assert_eq!(request.header("webhook-signature"), expected, "request {n}");
        assert_eq!(id, request.header("idempotency-key"));
        let event_id = format!("evt_{:03}", accepted.iter().position(|a| *a == id).unwrap());
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(body["id"], event_id.as_str(), "request {n}");
        assert_eq!(request.header("x-hookinbox-event-id"), event_id);
    }

    // One line per attempt on stdout, `--json`, each one JSON: every event
    // acknowledged, each one an event that was accepted.
    let lines = std::fs::read_to_string(dir.join("listen.out")).unwrap();
    for line in lines.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|error| panic!("{error}: not a JSON line: {line}"));
    }
    let acknowledged = acknowledged_in(&lines);
    assert_eq!(acknowledged.len(), EVENTS);
    assert!(acknowledged.iter().all(|id| accepted.contains(id)));

    the_stream_carries_no_secret(&admin, EVENTS).await;
    a_wrong_token_is_refused(&dir, &admin, &app, &state).await;
}

/// The inbox ids `listen --json` logged acknowledged (one line per
/// attempt on its stdout). A line still being written is not counted; the
/// test checks every line is JSON once `listen` is gone.
fn acknowledged(dir: &Path) -> std::collections::HashSet<String> {
    acknowledged_in(&std::fs::read_to_string(dir.join("listen.out")).unwrap_or_default())
}

/// The inbox ids logged acknowledged in `lines` (see [`acknowledged`]).
fn acknowledged_in(lines: &str) -> std::collections::HashSet<String> {
    lines
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|line| line["outcome"] == "acknowledged")
        .filter_map(|line| line["inbox_id"].as_str().map(str::to_owned))
        .collect()
}

/// The whole stream from the start, read raw: none of the configured
/// secrets' bytes, plain or base64, are in it.
async fn the_stream_carries_no_secret(admin: &str, events: usize) {
    let request = hyper::Request::get(format!("http://{admin}/admin/endpoints/lab/stream?since=0"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Full::default())
        .unwrap();
    let response = client().request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    let complete = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .matches("event: webhook")
            .count()
            >= events
    };
    while !complete(&bytes) {
        let frame = tokio::time::timeout(Duration::from_secs(30), body.frame())
            .await
            .expect("the stream goes on")
            .expect("the stream is open")
            .expect("a frame");
        if let Ok(data) = frame.into_data() {
            bytes.extend_from_slice(&data);
        }
    }
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    for secret in [LAB_SECRET, TOKEN, ENCRYPTION_KEY, TARGET_SECRET] {
        for form in [secret.to_owned(), b64(secret)] {
            assert!(
                !bytes.windows(form.len()).any(|w| w == form.as_bytes()),
                "the stream carries {form}"
            );
        }
    }
}

async fn a_wrong_token_is_refused(dir: &Path, admin: &str, app: &LocalApp, state: &Path) {
    let before = app.received().len();
    let other_state: PathBuf = dir.join("wrong-token-state.json");
    let output = listen_command(dir, admin, &app.url(), &other_state, "not-the-token")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run hookinbox listen");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("refused the token (401)"), "{stderr}");
    assert!(!other_state.exists(), "nothing saved");
    assert_eq!(app.received().len(), before, "nothing forwarded");
    assert!(state.exists());

    let request = hyper::Request::get(format!("http://{admin}/admin/endpoints/lab/stream"))
        .header("authorization", "Bearer not-the-token")
        .body(Full::default())
        .unwrap();
    let response = client().request(request).await.unwrap();
    assert_eq!(response.status(), 401);
}

on_both_backends!(forwards_every_event_once_in_order_through_a_kill_and_an_outage);
