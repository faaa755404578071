//! Storage that cannot be written answers 503 with Retry-After — never a
//! 2xx — for as long as it stays full, without a new payload segment file
//! per attempt; it loses nothing already acknowledged, and recovers when
//! space returns. The database lives on a tiny tmpfs that the test fills up.
//! Mounting needs root, so the test is `#[ignore]`d: a plain `cargo test`
//! lists it as ignored with its reason instead of passing without having
//! run, and `.ci/run` (as root) runs it with `--ignored`, where a failed
//! mount fails it.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

struct Tmpfs<'a>(&'a Path);

impl Tmpfs<'_> {
    fn mount<'a>(dir: &'a Path, size: &str) -> Result<Tmpfs<'a>, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(Tmpfs(dir))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(self.0)
            .status()
            .unwrap();
        assert!(status.success(), "remount failed");
    }
}

impl Drop for Tmpfs<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0).status();
    }
}

/// How long the disk stays full while requests keep arriving.
const FULL_FOR: Duration = Duration::from_secs(10);
/// A signed request every this often while the disk is full.
const REQUEST_EVERY: Duration = Duration::from_millis(20);

/// A body of about 60 KB: a handful fill the tmpfs.
fn padded_body(id: &str) -> String {
    let pad = "f".repeat(60_000);
    format!(r#"{{"id":"{id}","pad":"{pad}"}}"#)
}

fn padded_event(id: &str) -> Signed {
    lab_signed(padded_body(id), now())
}

fn assert_refused(answer: &Answer, id: &str) {
    assert_eq!(answer.status, 503, "{id}: {:?}", answer.body);
    assert_eq!(answer.error(), "unavailable", "{id}");
    assert!(answer.headers.contains_key("retry-after"), "{id}");
}

#[tokio::test]
#[ignore = "needs root to mount a tmpfs: cargo test -p hookinbox --test it -- --ignored disk_full::"]
async fn full_disk_answers_503_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let tmpfs = Tmpfs::mount(&mnt, "1536k")
        .unwrap_or_else(|error| panic!("this test needs root to mount a tmpfs: {error}"));
    let db = mnt.join("inbox.db");
    let server = Server::start(dir.path(), &config(&db, ""));
    let client = client();
    let url = server.url("/hooks/lab");

    let mut acked = Vec::new();
    let mut refused = None;
    for n in 0..200 {
        let id = format!("fill-{n}");
        let answer = post(&client, &url, &padded_event(&id)).await;
        match answer.status {
            200 => acked.push(id),
            503 => {
                assert_refused(&answer, &id);
                refused = Some(id);
                break;
            }
            other => panic!("unexpected {other}: {:?}", answer.body),
        }
    }
    let refused = refused.expect("the disk never filled up");
    assert!(!acked.is_empty());

    // The disk stays full while the provider keeps sending: every answer is
    // 503, and the payload log does not create a file per attempt (it did:
    // 2,477 files in 12 s).
    let segments_when_full = payload_log_segments(&db);
    let full_since = Instant::now();
    let mut every = tokio::time::interval(REQUEST_EVERY);
    let mut sent_while_full = Vec::new();
    while full_since.elapsed() < FULL_FOR {
        every.tick().await;
        let id = format!("while-full-{}", sent_while_full.len());
        assert_refused(&post(&client, &url, &padded_event(&id)).await, &id);
        sent_while_full.push(id);
    }
    let new_segments = payload_log_segments(&db) - segments_when_full;
    assert!(
        new_segments < 10,
        "{new_segments} new segment files for {} requests on a full disk",
        sent_while_full.len()
    );

    // Space comes back: the provider's retry of the refused event succeeds
    // once the payload log's pause after its last failure (at most 1 s) ends.
    tmpfs.resize("64m");
    let answer = retry_until_accepted(
        &client,
        &url,
        &padded_event(&refused),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(
        answer.json()["duplicate"],
        false,
        "the refused event had not been stored"
    );
    let after = "after-space-returned";
    let answer = post(&client, &url, &padded_event(after)).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);

    let rows = inbox_rows(&db);
    let stored: Vec<String> = rows.iter().map(|r| r.2.clone()).collect();
    for id in &acked {
        assert!(stored.contains(id), "acknowledged {id} is missing");
    }
    for id in &sent_while_full {
        assert!(!stored.contains(id), "{id} was refused, yet stored");
    }
    assert_eq!(stored.len(), acked.len() + 2);
    // Every stored body is intact, including those around the failed writes.
    let reader = hookinbox_store::SqliteReader::open(&db).unwrap();
    for (inbox_id, _, event_id) in &rows {
        let body = reader
            .load_event(inbox_id)
            .unwrap()
            .unwrap()
            .payload
            .unwrap();
        assert_eq!(
            body,
            padded_body(event_id).as_bytes(),
            "the body of {event_id}"
        );
    }
    drop(server);
}

/// `/readyz` names `disk` while the database's filesystem has fewer bytes
/// free than `storage.min_free_disk_bytes`, and clears once space returns:
/// a ballast file fills the tmpfs past the floor, then is deleted.
#[tokio::test]
#[ignore = "needs root to mount a tmpfs: cargo test -p hookinbox --test it -- --ignored disk_full::"]
async fn readyz_fails_disk_under_the_floor_and_clears_above_it() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let _tmpfs = Tmpfs::mount(&mnt, "16m")
        .unwrap_or_else(|error| panic!("this test needs root to mount a tmpfs: {error}"));
    let db = mnt.join("inbox.db");
    let extra = "[admin]\nlisten = \"127.0.0.1:0\"\n";
    let config = TestConfig::new(&db)
        .storage("min_free_disk_bytes = 8388608")
        .extra(extra)
        .to_string();
    let server = Server::start(dir.path(), &config);
    let admin = server.admin_address().await;
    assert_eq!(readyz(admin).await, (200, vec![]));

    // 10 MiB of 16: fewer than the 8 MiB floor left.
    let ballast = mnt.join("ballast");
    std::fs::write(&ballast, vec![0u8; 10 << 20]).unwrap();
    assert_eq!(readyz(admin).await, (503, vec!["disk".to_owned()]));
    let logs = server.logs();
    assert!(
        logs.contains("under storage.min_free_disk_bytes (8388608)"),
        "{logs}"
    );

    std::fs::remove_file(&ballast).unwrap();
    assert_eq!(readyz(admin).await, (200, vec![]));
}
