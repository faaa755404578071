//! The CLI: `verify` for one captured request offline, `stats`, start-up
//! refusing a bad config with a message that names the field, and the
//! manners of a Unix tool (a closed pipe, `--version`, one-line errors).

use crate::support;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;

use support::*;

fn hookinbox(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .output()
        .expect("run hookinbox")
}

const STRIPE_CONFIG: &str = r#"
[storage]
url = "sqlite://inbox.db"

[encryption]
allow_plaintext = true

[[endpoint]]
id = "stripe"
provider = "stripe"

[[endpoint.secret]]
version = "2026-11"
value = "whsec_K7d2NewSecretShared0"

[[endpoint.secret]]
version = "2026-05"
value_env = "HOOKINBOX_TEST_OLD_SECRET"
"#;

/// The stripe/previous-secret vector of `crates/hookinbox-verify/tests/vectors/`.
const STRIPE_BODY: &str = r#"{"id":"evt_s1NqWmQ2eZvKYlo2C","object":"event","api_version":"2024-06-20","created":1699999997,"type":"payment_intent.succeeded","livemode":false,"data":{"object":{"id":"pi_s3N","object":"payment_intent","amount":2000,"currency":"usd","status":"succeeded"}}}"#;
const STRIPE_SIG_OLD: &str =
    "t=1699999990,v1=0a4a0d662a0ffe498baabfe08a2492be9fb123b478604c9883f70e3b26f871a0";

fn verify(dir: &std::path::Path, signature: &str, now: &str) -> Output {
    let config = dir.join("hookinbox.toml");
    let body = dir.join("body.json");
    std::fs::write(&config, STRIPE_CONFIG).unwrap();
    std::fs::write(&body, STRIPE_BODY).unwrap();
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .env("HOOKINBOX_TEST_OLD_SECRET", "whsec_M3x9OldSecretShared0")
        .args(["verify", "--config"])
        .arg(&config)
        .args(["--endpoint", "stripe", "--now", now])
        .args(["--header", &format!("Stripe-Signature: {signature}")])
        .args(["--header", "Content-Type: application/json", "--body-file"])
        .arg(&body)
        .output()
        .unwrap()
}

#[test]
fn verify_accepts_and_names_the_matched_version() {
    let dir = tempfile::tempdir().unwrap();
    let out = verify(dir.path(), STRIPE_SIG_OLD, "1700000000");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        verdict,
        serde_json::json!({"accepted": true, "event_id": "evt_s1NqWmQ2eZvKYlo2C", "matched_secret_version": "2026-05"})
    );
}

#[test]
fn verify_explains_a_refusal_without_printing_secrets() {
    let dir = tempfile::tempdir().unwrap();
    // An hour later the signature is stale.
    let out = verify(dir.path(), STRIPE_SIG_OLD, "1700003600");
    assert_eq!(out.status.code(), Some(1));
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        verdict,
        serde_json::json!({"accepted": false, "reason": "timestamp"})
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("3610s old"), "{stderr}");
    assert!(stderr.contains("tolerance 300s"), "{stderr}");

    let wrong = STRIPE_SIG_OLD.replace("0a4a", "0a4b");
    let out = verify(dir.path(), &wrong, "1700000000");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("2026-11, 2026-05"),
        "tried versions are listed: {stderr}"
    );
    for secret in [
        "whsec_K7d2NewSecretShared0",
        "whsec_M3x9OldSecretShared0",
        "K7d2",
        "M3x9",
    ] {
        assert!(!stderr.contains(secret) && !String::from_utf8_lossy(&out.stdout).contains(secret));
    }
}

#[test]
fn bad_configs_stop_start_up_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            STRIPE_CONFIG.replace("provider = \"stripe\"", "provider = \"strype\""),
            "endpoint[0].provider",
        ),
        (
            STRIPE_CONFIG.replace("value_env = \"HOOKINBOX_TEST_OLD_SECRET\"", ""),
            "endpoint[0].secret[1]",
        ),
        (
            STRIPE_CONFIG.replace("HOOKINBOX_TEST_OLD_SECRET", "HOOKINBOX_TEST_UNSET_VAR"),
            "endpoint[0].secret[1].value_env",
        ),
        (
            STRIPE_CONFIG.replace("url = \"sqlite://inbox.db\"", "url = \"mysql://x\""),
            "storage.url",
        ),
        (
            STRIPE_CONFIG.replace("version = \"2026-11\"", "version = \"2026-11\"\ncolour = 1"),
            "colour",
        ),
    ];
    for (text, field) in cases {
        let config = dir.path().join("bad.toml");
        std::fs::write(&config, &text).unwrap();
        let (code, stderr) = serve_refused(
            &config,
            &[("HOOKINBOX_TEST_OLD_SECRET", "whsec_M3x9OldSecretShared0")],
        );
        assert_eq!(code, Some(2), "{field}: {stderr}");
        assert!(stderr.contains(field), "expected `{field}` in: {stderr}");
        assert!(!stderr.contains("whsec_"), "a secret leaked: {stderr}");
    }
}

#[tokio::test]
async fn stats_counts_by_endpoint_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &config(&db, ""));
    let client = client();
    for id in ["a", "b", "c"] {
        assert_eq!(
            post(&client, &server.url("/hooks/lab"), &lab_event(id))
                .await
                .status,
            200
        );
    }
    let out = hookinbox(&[
        "stats",
        "--json",
        "--config",
        server.config_path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["total"], 3);
    // The endpoint has no targets: its events are PROCESSED as accepted.
    assert_eq!(stats["by_status"]["PROCESSED"], 3);
    assert_eq!(stats["by_endpoint"]["lab"]["PROCESSED"], 3);
    let bodies: usize = ["a", "b", "c"]
        .map(|id| lab_event(id).body.len())
        .iter()
        .sum();
    assert_eq!(stats["disk"]["payload_log_bytes"], bodies as u64);
    assert_eq!(stats["disk"]["payload_segments"], 1);
    assert!(stats["disk"]["database_bytes"].as_u64().unwrap() > 0);
}

/// Accepts `count` lab events (`seed-0` …) through `server`, a few at a time.
async fn seed(server: &Server, count: usize) {
    let client = client();
    let url = server.url("/hooks/lab");
    let statuses: Vec<u16> = futures::stream::iter(0..count)
        .map(|n| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                post(&client, &url, &lab_event(&format!("seed-{n}")))
                    .await
                    .status
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    assert!(statuses.iter().all(|&status| status == 200), "{statuses:?}");
}

/// Waits for `child` to exit, at most `timeout`.
fn wait_at_most(child: &mut std::process::Child, timeout: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("wait for hookinbox") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("hookinbox did not exit within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `hookinbox events list --json | head -1`: once the reader has its line
/// and goes away, the command stops quietly with status 0 (it panicked with
/// "failed printing to stdout: Broken pipe" and a backtrace).
#[tokio::test]
async fn events_list_into_a_pipe_closed_early_exits_0_quietly() {
    const EVENTS: usize = 1_000;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &config(&db, ""));
    seed(&server, EVENTS).await;
    let config = server.config_path.to_str().unwrap().to_owned();
    let list = [
        "events", "list", "--json", "--limit", "1000", "--config", &config,
    ];

    // The whole listing is three times what a pipe holds (64 KiB) and the
    // buffers on either side, so the command is still writing when its
    // reader goes away.
    let whole = hookinbox(&list);
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    assert!(
        whole.stdout.len() > 3 * 64 * 1024,
        "{} bytes",
        whole.stdout.len()
    );

    let mut child = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(list)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookinbox");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read the first line");
    assert_eq!(first, "[\n");
    // The reader is dropped here, as `head -1` exits.
    let status = wait_at_most(&mut child, Duration::from_secs(30));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");
}

/// An error is one line, `error: …`, each cause once, with status 2.
#[test]
fn an_error_is_one_line_naming_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.toml");
    let out = hookinbox(&["stats", "--config", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let enoent = std::io::Error::from_raw_os_error(2);
    assert_eq!(
        stderr,
        format!("error: cannot read {}: {enoent}\n", missing.display())
    );
}

/// `--version` names the release and the commit the binary was built from:
/// the one `git` reports for this checkout, or "unknown" outside one.
#[test]
fn version_names_the_release_and_the_commit() {
    let out = hookinbox(&["--version"]);
    assert!(out.status.success());
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let built_from = option_env!("HOOKINBOX_BUILD_COMMIT")
        .map(str::trim)
        .filter(|commit| !commit.is_empty())
        .map(str::to_owned)
        .or_else(|| {
            git(&["ls-files", "--error-unmatch", "build.rs"])?;
            git(&["rev-parse", "--short", "HEAD"])
        })
        .unwrap_or_else(|| "unknown".to_owned());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "hookinbox {} (commit {built_from})\n",
            env!("CARGO_PKG_VERSION")
        )
    );
}

/// Only headers that explain a request are stored with it: an event posted
/// with credentials and custom headers shows none of them in `events show
/// --json`, and shows the signature it was verified with.
#[tokio::test]
async fn events_show_keeps_only_the_audit_allowlist_of_headers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &config(&db, ""));
    let event = lab_event("audited")
        .with("Authorization", "Bearer leaked-token")
        .with("Cookie", "session=leaked")
        .with("X-Api-Key", "leaked-key")
        .with("X-Custom-Marker", "marker")
        .with("User-Agent", "lab-sender/1.0");
    let answer = post(&client(), &server.url("/hooks/lab"), &event).await;
    assert_eq!(answer.status, 200);
    let id = answer.json()["id"].as_str().unwrap().to_owned();

    let config = server.config_path.to_str().unwrap();
    let out = hookinbox(&["events", "show", "--json", &id, "--config", config]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = shown["headers"]
        .as_array()
        .expect("headers listed")
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    for dropped in ["authorization", "cookie", "x-api-key", "x-custom-marker"] {
        assert!(!names.contains(&dropped), "{dropped} kept: {names:?}");
    }
    for kept in ["x-signature", "x-timestamp", "content-type", "user-agent"] {
        assert!(names.contains(&kept), "{kept} dropped: {names:?}");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("leaked"), "{text}");
}

/// `events show` without `--json` is a summary a person reads (it was a
/// JSON dump): the event, its delivery's status and attempts, and the
/// error of the attempt that failed, from the real rows.
#[tokio::test]
async fn events_show_summarises_an_event_and_its_deliveries() {
    let sink = Sink::start().await;
    sink.respond_with(|n, _| (if n == 0 { 500 } else { 200 }, vec![]));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &config_with_target(&db, &sink.url(), "", ""));
    let event = lab_event("shown");
    let answer = post(&client(), &server.url("/hooks/lab"), &event).await;
    assert_eq!(answer.status, 200);
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    let processed = eventually(Duration::from_secs(10), || {
        inbox_status(&db).get("shown").map(String::as_str) == Some("PROCESSED")
    })
    .await;
    assert!(processed, "delivered on the second attempt");

    let config = server.config_path.to_str().unwrap();
    let out = hookinbox(&["events", "show", &id, "--config", config]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut expected = vec![
        format!("event      {id}\n"),
        "endpoint   lab (lab)\n".to_owned(),
        "event id   shown\n".to_owned(),
        "type       payment.succeeded\n".to_owned(),
        "status     PROCESSED\n".to_owned(),
        format!("payload    {} bytes, application/json\n", event.body.len()),
        "secret     version v1\n".to_owned(),
        "\ndeliveries 1\n".to_owned(),
        "  sink  DELIVERED  2 attempts  (delivery ".to_owned(),
    ];
    // The failed first attempt says so: it is retried, not pending.
    expected.extend(["  RETRY  http 500\n", "  DELIVERED\n"].map(str::to_owned));
    let mut rest = text.as_str();
    for part in &expected {
        let at = rest
            .find(part.as_str())
            .unwrap_or_else(|| panic!("expected {part:?} (in this order) in:\n{text}"));
        rest = &rest[at + part.len()..];
    }
    assert!(
        text.lines().any(|l| l.starts_with("    attempt 1   ")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("    attempt 2   ")),
        "{text}"
    );
}

/// Signs in to the dashboard at `admin` with `token`: the `name=value` of
/// the session cookie it sets.
async fn dashboard_sign_in(
    client: &HttpClient,
    admin: std::net::SocketAddr,
    token: &str,
) -> String {
    let form = Signed {
        headers: vec![(
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        )],
        body: format!("token={token}").into(),
    };
    let answer = send(client, "POST", &format!("http://{admin}/ui/login"), &form)
        .await
        .unwrap();
    assert_eq!(answer.status, 303);
    let cookie = answer.headers["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

/// Two processes on one host share one file: the second moves its admin
/// listener with `--admin-listen` (as its public one with `--listen`), and
/// signing in to one dashboard does not sign the other out — a browser
/// sends both cookies to both ports, and each finds its own.
#[tokio::test]
async fn two_processes_on_one_host_share_a_config_and_keep_their_sign_ins() {
    const TOKEN: &str = "two-processes-token-0001";
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let file_port = taken.local_addr().unwrap().port();
    drop(taken);
    let admin = format!("[admin]\nlisten = \"127.0.0.1:{file_port}\"\ntoken = \"{TOKEN}\"\n");
    let first = Server::start(dir.path(), &config(&db, &admin));
    let second_dir = tempfile::tempdir().unwrap();
    let second = Server::start_with_args(
        second_dir.path(),
        &first.config_path,
        &["--admin-listen", "127.0.0.1:0"],
    );
    let first_admin = first.admin_address().await;
    let second_admin = second.admin_address().await;
    assert_eq!(first_admin.port(), file_port);
    assert_ne!(second_admin.port(), file_port);

    let client = client();
    let first_cookie = dashboard_sign_in(&client, first_admin, TOKEN).await;
    let second_cookie = dashboard_sign_in(&client, second_admin, TOKEN).await;
    assert!(
        first_cookie.starts_with(&format!("hookinbox_session_{file_port}=")),
        "{first_cookie}"
    );
    let both = Signed {
        headers: vec![("cookie".into(), format!("{first_cookie}; {second_cookie}"))],
        body: Default::default(),
    };
    for admin in [first_admin, second_admin] {
        let page = send(&client, "GET", &format!("http://{admin}/ui"), &both)
            .await
            .unwrap();
        assert_eq!(page.status, 200, "{admin}: still signed in");
    }
}

/// `--admin-listen` off loopback follows the file's rule: a token, or no start.
#[test]
fn admin_listen_off_loopback_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("hookinbox.toml");
    let admin = "[admin]\nlisten = \"127.0.0.1:0\"\n";
    std::fs::write(&config_path, config(&dir.path().join("inbox.db"), admin)).unwrap();
    let out = hookinbox(&[
        "serve",
        "--config",
        config_path.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "0.0.0.0:0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("admin.token: --admin-listen 0.0.0.0:0 is reachable from other machines"),
        "{stderr}"
    );
}
