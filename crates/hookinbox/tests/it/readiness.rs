//! `/readyz` of the real binary turning red and back, check by check, and
//! naming only the check: `storage` while commits hang (a read would still
//! pass), `workers` once a worker has been stuck past its bound, `secrets`
//! while an endpoint has no secret version in its window. (`disk` needs a
//! filesystem the test can fill: `disk_full.rs`, run as root.)

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use support::*;

/// Polls `/readyz` until it answers `failing` (or 30 s pass).
async fn until_failing(admin: SocketAddr, failing: &[&str]) -> (u16, Vec<String>) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let answer = readyz(admin).await;
        if answer.1 == failing || std::time::Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_and_workers_turn_red_while_commits_hang_and_green_after() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let stall = dir.path().join("stall");
    let sink = Sink::start().await;
    // Workers and the lease rescuer write through the writer: while
    // commits hang, so do they. The rescuer (every 200 ms) counts as stuck
    // first, after the minimum bound of 10 s; the worker (its lease, 4 s,
    // is the longest turn of its loop) after 12 s.
    let config = TestConfig::new(&db)
        .http_target(&sink.url(), "")
        .extra("[admin]\nlisten = \"127.0.0.1:0\"\n\n[reconcile]\nenabled = false\n")
        .to_string();
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, config).unwrap();
    let failpoint = format!("stall_commit:{}", stall.display());
    let server = Server::start_full(
        dir.path(),
        &config_path,
        &[],
        &[("HOOKINBOX_FAILPOINT", &failpoint)],
    );
    let admin = server.admin_address().await;
    assert_eq!(readyz(admin).await, (200, vec![]));

    std::fs::write(&stall, b"").unwrap();
    assert_eq!(
        readyz(admin).await,
        (503, vec!["storage".to_owned()]),
        "the write probe does not commit within 2 s"
    );
    let stuck = until_failing(admin, &["storage", "workers"]).await;
    assert_eq!(
        stuck,
        (503, vec!["storage".to_owned(), "workers".to_owned()])
    );
    let logs = server.logs();
    assert!(logs.contains("Readiness check failed."), "{logs}");
    assert!(
        logs.contains("workers: ended or stuck: lease rescuer"),
        "the log names the task: {logs}"
    );

    std::fs::remove_file(&stall).unwrap();
    assert_eq!(until_failing(admin, &[]).await, (200, vec![]));
    // And the service did its job again: an event goes through.
    let answer = post(&client(), &server.url("/hooks/lab"), &lab_event("after")).await;
    assert_eq!(answer.status, 200);
    assert!(eventually(Duration::from_secs(10), || !sink.accepted().is_empty()).await);
}

#[tokio::test]
async fn an_endpoint_without_a_secret_version_in_its_window_fails_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    // Its only version starts trusting 4 s from now: red until then, then
    // green, with nothing reloaded.
    let starts = now() + 4;
    let config = TestConfig::new(&db)
        .extra(&format!(
            r#"
[[endpoint]]
id = "later"
provider = "lab"
[[endpoint.secret]]
version = "next"
value = "{LAB_SECRET}"
not_before = {starts}

[admin]
listen = "127.0.0.1:0"
"#
        ))
        .to_string();
    let server = Server::start(dir.path(), &config);
    let admin = server.admin_address().await;
    assert_eq!(readyz(admin).await, (503, vec!["secrets".to_owned()]));
    let (status, failing) = until_failing(admin, &[]).await;
    assert_eq!((status, failing), (200, vec![]));
    assert!(
        now() >= starts,
        "green only once the version is in its window"
    );
    let logs = server.logs();
    assert!(
        logs.contains("no secret version in its window for later"),
        "{logs}"
    );
    assert!(!logs.contains(LAB_SECRET));
}
