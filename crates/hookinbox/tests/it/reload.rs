//! SIGHUP means "re-read", never "exit": `systemctl reload` (the unit's
//! `ExecReload` is `kill -HUP`) must not stop a service without
//! `[server.tls]`, nor `work`, which has nothing to re-read. The TLS reload
//! itself is in `ingress_tls.rs`, the key reload in `key_rotation.rs`.

use crate::support;

use std::process::{Command, Stdio};
use std::time::Duration;

use support::*;

#[tokio::test]
async fn sighup_without_tls_reloads_secrets_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &config(&db, ""));
    let client = client();
    let url = server.url("/hooks/lab");
    assert_eq!(post(&client, &url, &lab_event("before")).await.status, 200);

    sighup(&server);
    logged(&server, "Secrets reloaded.", 1).await;
    // A second one too: the handler stays installed.
    sighup(&server);
    logged(&server, "Secrets reloaded.", 2).await;

    let after = post(&client, &url, &lab_event("after")).await;
    assert_eq!(after.status, 200, "{:?}", after.body);
    assert_eq!(inbox_rows(&db).len(), 2);
}

#[tokio::test]
async fn sighup_to_work_is_logged_and_the_workers_keep_running() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, config(&db, "")).unwrap();
    let log_path = dir.path().join("stderr.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut worker = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["work", "--config"])
        .arg(&config_path)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let logs = || std::fs::read_to_string(&log_path).unwrap_or_default();
    // "Delivering." is logged once the SIGHUP handler is in place.
    let started = eventually(Duration::from_secs(20), || logs().contains("Delivering.")).await;
    let pid = worker.id().to_string();
    let kill = |signal: &str| {
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success());
    };
    if started {
        kill("-HUP");
    }
    let reloaded = eventually(Duration::from_secs(10), || {
        logs().contains("nothing to reload")
    })
    .await;
    // Alive after the SIGHUP: SIGTERM still gets the graceful stop (exit 0).
    kill("-TERM");
    let exited = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Some(status) = worker.try_wait().unwrap() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    if exited.is_err() {
        let _ = worker.kill();
        let _ = worker.wait();
    }
    assert!(started && reloaded, "{}", logs());
    let status = exited.expect("work did not stop on SIGTERM");
    assert!(status.success(), "{status:?}\n{}", logs());
}
