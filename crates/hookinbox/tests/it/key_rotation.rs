//! Secret rotation without a restart, against the real binary: a SIGHUP
//! re-reads the `[[endpoint.secret]]` versions and swaps the key ring while
//! requests are in flight, and a source that cannot be read keeps the ring
//! in use and says so (log, metric, `/readyz`).

use crate::support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::*;

const OLD: &str = "old-secret-for-rotation-0001";
const NEW: &str = "new-secret-for-rotation-0002";
const TOKEN: &str = "admin-t0ken-for-tests";

/// The configuration with a `rot` endpoint whose secret versions are
/// `secrets` (TOML tables), and an admin listener.
fn rotation_config(db: &Path, secrets: &str) -> String {
    TestConfig::new(db)
        .extra(&format!(
            "[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n\n[[endpoint]]\nid = \"rot\"\nprovider = \"lab\"\n{secrets}"
        ))
        .to_string()
}

fn version(name: &str, source: &str) -> String {
    format!("[[endpoint.secret]]\nversion = \"{name}\"\n{source}\n")
}

/// A `lab` event with this id signed now with `secret`.
fn signed_with(secret: &str, id: &str) -> Signed {
    let ts = now();
    let body = format!(r#"{{"id":"{id}","type":"t"}}"#);
    let signature = hookinbox_verify::providers::lab::sign(secret, ts, body.as_bytes());
    Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-timestamp".into(), ts.to_string()),
            ("x-signature".into(), signature),
        ],
        body: body.into(),
    }
}

/// Posts events signed with `secret` every 10 ms until `stop`; the
/// statuses that were not 200, with the event id.
fn sender(
    url: String,
    secret: &'static str,
    prefix: &'static str,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicUsize>,
) -> tokio::task::JoinHandle<Vec<(String, u16)>> {
    tokio::spawn(async move {
        let client = client();
        let mut refused = Vec::new();
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            let id = format!("{prefix}-{n}");
            let answer = post(&client, &url, &signed_with(secret, &id)).await;
            if answer.status != 200 {
                refused.push((id, answer.status));
            }
            n += 1;
            sent.store(n, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        refused
    })
}

/// Runs `hookinbox keys …` against the server's admin listener.
async fn keys(server: &Server, args: &[&str]) -> std::process::Output {
    let admin = server.admin_address().await.to_string();
    let config = server.config_path.to_str().unwrap().to_owned();
    let mut all = vec!["keys"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--config", &config, "--admin", &admin]);
    let all: Vec<String> = all.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
            .args(&all)
            .output()
            .expect("run hookinbox keys")
    })
    .await
    .unwrap()
}

/// `keys status --json`: version name → (active, matches in 24 h) of
/// `rot`'s ring.
async fn rot_versions(server: &Server) -> Vec<(String, bool, u64)> {
    rot_listed(server)
        .await
        .into_iter()
        .filter(|(_, in_ring, _, _)| *in_ring)
        .map(|(version, _, active, matches)| (version, active, matches))
        .collect()
}

/// `keys status --json`: every version of `rot` listed, those a reload
/// removed from the ring included: (version, in_ring, active, matches).
async fn rot_listed(server: &Server) -> Vec<(String, bool, bool, u64)> {
    let out = keys(server, &["status", "--json"]).await;
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.logs()
    );
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let endpoints = status["endpoints"].as_array().unwrap();
    let rot = endpoints
        .iter()
        .find(|e| e["id"] == "rot")
        .expect("rot listed");
    rot["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["version"].as_str().unwrap().to_owned(),
                v["in_ring"].as_bool().unwrap(),
                v["active"].as_bool().unwrap(),
                v["matches_24h"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Polls `keys status` until `rot`'s version names are `names`.
async fn until_versions(server: &Server, names: &[&str]) -> Vec<(String, bool, u64)> {
    for _ in 0..100 {
        let versions = rot_versions(server).await;
        if versions
            .iter()
            .map(|v| v.0.as_str())
            .eq(names.iter().copied())
        {
            return versions;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "rot never had versions {names:?}: {:?}",
        rot_versions(server).await
    );
}

async fn admin_get(admin: std::net::SocketAddr, path: &str) -> Answer {
    let request = Signed {
        headers: vec![("authorization".into(), format!("Bearer {TOKEN}"))],
        body: Default::default(),
    };
    send(&client(), "GET", &format!("http://{admin}{path}"), &request)
        .await
        .expect("the admin listener answers")
}

/// Waits until `sent` has grown by at least `more`.
async fn until_sent(sent: &AtomicUsize, more: usize) {
    let target = sent.load(Ordering::Relaxed) + more;
    let reached = eventually(Duration::from_secs(20), || {
        sent.load(Ordering::Relaxed) >= target
    })
    .await;
    assert!(reached, "the sender stalled");
}

/// Old-secret requests run across the SIGHUP that adds the new version,
/// new-secret requests across the one that retires the old: none of them
/// is refused. After the retirement the old secret gets 401.
#[tokio::test]
async fn rotation_under_load_refuses_nothing_signed_with_a_trusted_version() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let old = version("old", &format!("value = \"{OLD}\""));
    let new = version("new", &format!("value = \"{NEW}\""));
    let server = Server::start(dir.path(), &rotation_config(&db, &old));
    let url = server.url("/hooks/rot");

    let stop_old = Arc::new(AtomicBool::new(false));
    let sent_old = Arc::new(AtomicUsize::new(0));
    let old_sender = sender(url.clone(), OLD, "old", stop_old.clone(), sent_old.clone());
    until_sent(&sent_old, 20).await;

    // Add the new version.
    std::fs::write(
        &server.config_path,
        rotation_config(&db, &(old.clone() + &new)),
    )
    .unwrap();
    sighup(&server);
    logged(&server, "Secrets reloaded.", 1).await;
    let stop_new = Arc::new(AtomicBool::new(false));
    let sent_new = Arc::new(AtomicUsize::new(0));
    let new_sender = sender(url.clone(), NEW, "new", stop_new.clone(), sent_new.clone());
    until_sent(&sent_new, 20).await;
    until_sent(&sent_old, 20).await;

    // The provider has switched: the old version is retired.
    stop_old.store(true, Ordering::Relaxed);
    let old_refused = old_sender.await.unwrap();
    let before_retirement = rot_versions(&server).await;
    let old_sent = sent_old.load(Ordering::Relaxed) as u64;
    assert!(
        matches!(&before_retirement[..], [(o, true, n), (v, true, _)] if o == "old" && *n == old_sent && v == "new"),
        "{before_retirement:?}, {old_sent} sent"
    );
    std::fs::write(&server.config_path, rotation_config(&db, &new)).unwrap();
    sighup(&server);
    until_versions(&server, &["new"]).await;
    until_sent(&sent_new, 20).await;
    stop_new.store(true, Ordering::Relaxed);
    let new_refused = new_sender.await.unwrap();

    assert_eq!(old_refused, [], "old-secret requests before retirement");
    assert_eq!(new_refused, [], "new-secret requests after the add");
    let retired = post(&client(), &url, &signed_with(OLD, "old-late")).await;
    assert_eq!(retired.status, 401, "{:?}", retired.body);
    assert_eq!(retired.error(), "signature");
    // Out of the ring, the old version is still listed with its count.
    let listed = rot_listed(&server).await;
    assert!(
        listed.contains(&("old".to_owned(), false, false, old_sent)),
        "{listed:?}"
    );
    assert!(
        !server.logs().contains("Secrets not reloaded"),
        "{}",
        server.logs()
    );
}

/// A secret file that cannot be read on a reload (`keys reload`) keeps the
/// ring in use, and `keys reload` exits 1 naming the field:
/// requests signed with it are still accepted, the log names the field,
/// the failure is counted and `/readyz` names `secrets` until a reload
/// succeeds.
#[tokio::test]
async fn an_unreadable_source_keeps_the_ring_and_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let secret_file = dir.path().join("rot.secret");
    std::fs::write(&secret_file, format!("{OLD}\n")).unwrap();
    let source = format!("value_file = \"{}\"", secret_file.display());
    let server = Server::start(dir.path(), &rotation_config(&db, &version("v1", &source)));
    let admin = server.admin_address().await;
    let url = server.url("/hooks/rot");
    assert_eq!(admin_get(admin, "/readyz").await.status, 200);

    std::fs::remove_file(&secret_file).unwrap();
    let out = keys(&server, &["reload"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("endpoint[1].secret[0]"), "{stdout}");
    logged(&server, "Secrets not reloaded", 1).await;
    let logs = server.logs();
    let line = logs
        .lines()
        .find(|l| l.contains("Secrets not reloaded"))
        .unwrap();
    assert!(line.contains("endpoint[1].secret[0]"), "{line}");
    assert!(!logs.contains(OLD), "the secret is never logged");

    let answer = post(&client(), &url, &signed_with(OLD, "still-1")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let ready = admin_get(admin, "/readyz").await;
    assert_eq!(ready.status, 503);
    assert_eq!(ready.json()["failing"], serde_json::json!(["secrets"]));
    let metrics = admin_get(admin, "/metrics").await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.lines()
            .any(|l| l.starts_with("hookinbox_secret_reload_failures_total") && l.ends_with(" 1")),
        "{text}"
    );

    std::fs::write(&secret_file, NEW).unwrap();
    sighup(&server);
    logged(&server, "Secrets reloaded.", 1).await;
    assert_eq!(admin_get(admin, "/readyz").await.status, 200);
    let answer = post(&client(), &url, &signed_with(NEW, "new-1")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
}

/// A reload that leaves no version inside its window (the new one is not
/// trusted yet, the old one is retired) turns the endpoint's answers into a
/// retryable 503, for signed and unsigned requests alike, never a 401; and
/// a change besides secret versions is reported as needing a restart.
#[tokio::test]
async fn a_gap_between_versions_answers_503_and_other_changes_need_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let old = version("old", &format!("value = \"{OLD}\""));
    let server = Server::start(dir.path(), &rotation_config(&db, &old));
    let url = server.url("/hooks/rot");
    assert_eq!(
        post(&client(), &url, &signed_with(OLD, "before"))
            .await
            .status,
        200
    );

    let gap = format!(
        "{}not_after = 1000\n{}not_before = {}\n",
        version("old", &format!("value = \"{OLD}\"")),
        version("new", &format!("value = \"{NEW}\"")),
        now() + 3600
    );
    let config =
        rotation_config(&db, &gap).replace("[admin]", "[server]\nmax_connections = 77\n\n[admin]");
    std::fs::write(&server.config_path, config).unwrap();
    let out = keys(&server, &["reload", "--json"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["restart_needed"], true, "{report}");
    assert_eq!(report["failed"], serde_json::json!([]), "{report}");
    assert!(
        server.logs().contains("ignored until a restart"),
        "{}",
        server.logs()
    );

    for request in [
        signed_with(OLD, "after-old"),
        signed_with(NEW, "after-new"),
        signed_with(OLD, "unsigned").without("x-signature"),
    ] {
        let answer = post(&client(), &url, &request).await;
        assert_eq!(answer.status, 503, "{:?}", answer.body);
        assert_eq!(answer.error(), "unavailable");
        assert_eq!(
            answer
                .headers
                .get("retry-after")
                .and_then(|v| v.to_str().ok()),
            Some("60")
        );
    }
    assert_eq!(inbox_rows(&db).len(), 1, "nothing accepted in the gap");
}
