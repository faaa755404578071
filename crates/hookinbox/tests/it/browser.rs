//! The dashboard in a real browser: `hookinbox serve` with a target that
//! fails, one event failed for good, then the target fixed and the Node
//! script `tests/browser/dashboard.mjs` driving Debian's headless Chromium
//! (playwright-core): sign in, the failed event on the overview, its page,
//! replay with confirmation, delivered, then the target paused and resumed
//! from its endpoint's page (one audit line each) — with axe-core on every page and
//! screenshots in `target/browser-artifacts/`.
//!
//! It needs Chromium and `npm ci` in `tests/browser/`, so a plain `cargo
//! test` skips it (ignored); `.ci/run` installs both and runs it with
//! `--ignored`. Run there, a missing tool fails it, saying what to install.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::*;

const TOKEN: &str = "admin-t0ken-for-the-browser";
const EVENT_ID: &str = "browser_evt_1";

fn chromium() -> PathBuf {
    let path = PathBuf::from(
        std::env::var("HOOKINBOX_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()),
    );
    assert!(
        path.exists(),
        "no Chromium at {} (apt-get install -y chromium, or set HOOKINBOX_CHROMIUM)",
        path.display()
    );
    path
}

fn script_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    assert!(
        dir.join("node_modules/playwright-core").exists()
            && dir.join("node_modules/axe-core").exists(),
        "run `npm ci` in {} first (.ci/run does)",
        dir.display()
    );
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and npm packages; .ci/run installs them and runs it"]
async fn an_operator_replays_a_failed_event_from_the_dashboard() {
    let chromium = chromium();
    let scripts = script_dir();
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser-artifacts");
    let _ = std::fs::remove_dir_all(&artifacts);

    let sink = Sink::start().await;
    sink.respond_with(|_, _| (503, vec![]));
    let dir = tempfile::tempdir().unwrap();
    let config = TestConfig::new(&dir.path().join("inbox.db"))
        .http_target(&sink.url(), "max_attempts = 2")
        .extra(&admin_table(TOKEN));
    let server = Server::start(dir.path(), &config.to_string());
    let admin = server.admin_address().await;
    let client = client();
    let answer = post(&client, &server.url("/hooks/lab"), &lab_event(EVENT_ID)).await;
    assert_eq!(answer.status, 200);
    let inbox_id = answer.json()["id"].as_str().unwrap().to_owned();
    let db = dir.path().join("inbox.db");
    assert!(
        eventually(Duration::from_secs(20), || inbox_status(&db)
            .get(EVENT_ID)
            .is_some_and(|s| s == "FAILED"))
        .await,
        "the event failed"
    );
    // The target is fixed; the operator finds out and replays.
    sink.respond_with(|_, _| (200, vec![]));

    let out = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(scripts.join("dashboard.mjs"))
            .current_dir(&scripts)
            .env("DASHBOARD_URL", format!("http://{admin}"))
            .env("ADMIN_TOKEN", TOKEN)
            .env("EVENT_ID", EVENT_ID)
            .env("ARTIFACTS", &artifacts)
            .env("CHROMIUM", &chromium)
            .output()
            .expect("run node (apt-get install -y nodejs npm)")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the browser script failed:\n{stdout}\n{stderr}"
    );

    let delivered = sink.accepted();
    assert_eq!(delivered.len(), 1, "the replay reached the target once");
    assert_eq!(delivered[0].header("idempotency-key"), inbox_id);
    assert_eq!(inbox_status(&db)[EVENT_ID], "PROCESSED");
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser-artifacts");
    let logs = server.logs();
    for said in [
        "Target paused by an operator.",
        "Target resumed by an operator.",
    ] {
        let lines: Vec<&str> = logs.lines().filter(|l| l.contains(said)).collect();
        assert_eq!(lines.len(), 1, "one audit line: {said}\n{logs}");
        assert!(
            lines[0].contains("sink") && lines[0].contains("dashboard"),
            "{}",
            lines[0]
        );
    }
    for screenshot in ["overview.png", "event.png", "endpoint-paused.png"] {
        let bytes = std::fs::read(artifacts.join(screenshot)).expect(screenshot);
        assert!(bytes.starts_with(b"\x89PNG"), "{screenshot} is a PNG");
    }
}
