//! Storage that cannot be written answers 503 with Retry-After — never a
//! 2xx — loses nothing already acknowledged, and recovers when space returns.
//! The database lives on a tiny tmpfs that the test fills up (needs root to
//! mount, as CI has; outside CI without root the test says so and returns).

mod support;

use std::path::Path;
use std::process::Command;

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

#[tokio::test]
async fn full_disk_answers_503_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let tmpfs = match Tmpfs::mount(&mnt, "1536k") {
        Ok(tmpfs) => tmpfs,
        Err(error) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED full_disk_answers_503_and_loses_nothing: cannot mount tmpfs ({error}); CI runs it as root");
            return;
        }
        Err(error) => panic!("CI must be able to mount a tmpfs for this test: {error}"),
    };
    let db = mnt.join("inbox.db");
    let server = Server::start(dir.path(), &config(&db, ""));
    let client = client();
    let url = server.url("/hooks/lab");

    let mut acked = Vec::new();
    let mut refused = None;
    for n in 0..200 {
        let id = format!("fill-{n}");
        let pad = "f".repeat(60_000);
        let answer = post(
            &client,
            &url,
            &lab_signed(format!(r#"{{"id":"{id}","pad":"{pad}"}}"#), now()),
        )
        .await;
        match answer.status {
            200 => acked.push(id),
            503 => {
                assert_eq!(answer.error(), "unavailable");
                assert!(answer.headers.contains_key("retry-after"));
                refused = Some(id);
                break;
            }
            other => panic!("unexpected {other}: {:?}", answer.body),
        }
    }
    let refused = refused.expect("the disk never filled up");
    assert!(!acked.is_empty());

    // Space comes back: the provider's retry of the refused event succeeds.
    tmpfs.resize("64m");
    let pad = "f".repeat(60_000);
    let retry = lab_signed(format!(r#"{{"id":"{refused}","pad":"{pad}"}}"#), now());
    let answer = post(&client, &url, &retry).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(
        answer.json()["duplicate"],
        false,
        "the refused event had not been stored"
    );

    let rows = inbox_rows(&db);
    let stored: Vec<String> = rows.iter().map(|r| r.2.clone()).collect();
    for id in &acked {
        assert!(stored.contains(id), "acknowledged {id} is missing");
    }
    assert_eq!(stored.len(), acked.len() + 1);
    // Every stored body is intact, including those around the failed write.
    let reader = hookinbox_store::SqliteReader::open(&db).unwrap();
    for (inbox_id, _, event_id) in &rows {
        let body = reader
            .load_event(inbox_id)
            .unwrap()
            .unwrap()
            .payload
            .unwrap();
        let expected = format!(r#"{{"id":"{event_id}","pad":"{pad}"}}"#);
        assert_eq!(body, expected.as_bytes(), "the body of {event_id}");
    }
    drop(server);
}
