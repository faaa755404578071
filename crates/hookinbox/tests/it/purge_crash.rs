//! kill -9 during a purge, against the real binary, with ingress going on.
//!
//! The database starts with 1,200 old events written through the store
//! (no request can be old): half received three days ago (past the
//! `dedup` rule, deleted whole), half two hours ago (past `raw_payload`
//! only: body dropped, row kept), in six payload segments. `serve` purges
//! them in batches of 40 every 50 ms while a client sends new events (all
//! inside retention).
//!
//! Each round arms the store's purge stall point (`stall_purge:PATH`): the
//! purge task's first batch commits its row changes, then holds before the
//! op that deletes the segments those rows no longer reference — the
//! moment a crash leaves segments behind. The process marks that it got
//! there (`PATH.reached`); the test waits for the mark, for more
//! acknowledgements after it, then sends SIGKILL while requests are in
//! flight. That the kill landed mid-purge is checked in the files: some
//! old events are purged, some are still due.
//!
//! After every kill, reading the database as it was left: every
//! acknowledged new event is there with its exact body; each old event is
//! either gone (three days old) or bodiless (two hours old), or still
//! whole with its exact body (not purged yet) — never a row that points at
//! a body that cannot be read. Finally an unarmed `serve` finishes the
//! purge: nothing old is left due, the segments left behind by the kills
//! are deleted, and the new events are untouched.

use crate::support;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookinbox_store::{SqliteOptions, SqliteStore, Store};
use support::*;

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;
const OLD_SEGMENTS: usize = 6;
const OLD_PER_SEGMENT: usize = 200;
const ROUNDS: usize = 3;

fn old_body(event_id: &str) -> String {
    // Long enough that the six segments hold real bytes, compressed too.
    let seed = event_id
        .bytes()
        .fold(0_u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    format!(
        r#"{{"id":"{event_id}","type":"test.event","padding":"{}"}}"#,
        random_text(seed, 600)
    )
}

/// `len` JSON-safe characters drawn by a 64-bit LCG from `seed`: text zstd
/// shrinks only to about three quarters (bodies are compressed before they
/// are stored, and a run of one letter would take a few bytes on disk).
fn random_text(seed: u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            char::from(ALPHABET[(state >> 58) as usize % ALPHABET.len()])
        })
        .collect()
}

fn new_body(event_id: &str) -> String {
    format!(r#"{{"id":"{event_id}","type":"payment.succeeded","amount":7}}"#)
}

/// Whether the old event `n` is the three-day-old kind (else two hours).
fn three_days_old(n: usize) -> bool {
    n.is_multiple_of(2)
}

/// Writes the old events, one store session per segment (a new writer
/// starts a new segment).
async fn preload(db: &Path) -> BTreeMap<String, usize> {
    let now = now() * 1000;
    let mut old = BTreeMap::new();
    for segment in 0..OLD_SEGMENTS {
        let mut options = SqliteOptions::new(db);
        options.keys = Some(test_encryption_keys());
        let store = Arc::new(SqliteStore::open(options).unwrap());
        let mut accepts = Vec::new();
        for k in 0..OLD_PER_SEGMENT {
            let n = segment * OLD_PER_SEGMENT + k;
            let event_id = format!("old-{n}");
            let age = if three_days_old(n) {
                3 * DAY_MS
            } else {
                2 * HOUR_MS
            };
            let event = lab_stored_event(&event_id, old_body(&event_id).as_bytes(), now - age);
            let store = Arc::clone(&store);
            accepts.push(tokio::spawn(async move { store.accept(event).await }));
            old.insert(event_id, n);
        }
        for accept in accepts {
            assert!(matches!(
                accept.await.unwrap().unwrap(),
                hookinbox_store::AcceptOutcome::Inserted { .. }
            ));
        }
    }
    old
}

/// Inbox ids by event id, and which rows still hold a body.
fn rows(db: &Path) -> (BTreeMap<String, String>, HashSet<String>) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut ids = BTreeMap::new();
    let mut with_body = HashSet::new();
    let mut statement = conn
        .prepare("SELECT provider_event_id, id, payload_segment IS NOT NULL FROM inbox")
        .unwrap();
    let found = statement
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, bool>(2)?,
            ))
        })
        .unwrap();
    for row in found {
        let (event_id, id, body) = row.unwrap();
        if body {
            with_body.insert(event_id.clone());
        }
        ids.insert(event_id, id);
    }
    (ids, with_body)
}

/// How many old events are purged (gone, or their body dropped).
fn old_purged(db: &Path, old: &BTreeMap<String, usize>) -> usize {
    let (ids, with_body) = rows(db);
    old.keys()
        .filter(|event_id| !ids.contains_key(*event_id) || !with_body.contains(*event_id))
        .count()
}

/// Checks the database as a kill left it (no process running), through
/// the store: every acknowledged event whole, every old one gone, bodiless
/// or whole, none unreadable.
async fn check_after_kill(db: &Path, old: &BTreeMap<String, usize>, acked: &[(String, String)]) {
    let (ids, _) = rows(db);
    let mut options = SqliteOptions::new(db);
    options.keys = Some(test_encryption_keys());
    let store = SqliteStore::open(options).unwrap();
    for (event_id, inbox_id) in acked {
        let event = store
            .load_event(inbox_id)
            .await
            .unwrap_or_else(|e| panic!("acknowledged {event_id} cannot be read: {e}"))
            .unwrap_or_else(|| panic!("acknowledged {event_id} is missing"));
        assert_eq!(
            event.payload.as_deref(),
            Some(new_body(event_id).as_bytes()),
            "acknowledged {event_id} lost its body"
        );
    }
    for (event_id, n) in old {
        let Some(inbox_id) = ids.get(event_id) else {
            assert!(
                three_days_old(*n),
                "{event_id} (two hours old) was deleted whole"
            );
            continue;
        };
        let event = store
            .load_event(inbox_id)
            .await
            .unwrap_or_else(|e| panic!("{event_id} is half purged: {e}"))
            .unwrap();
        if let Some(body) = event.payload {
            assert_eq!(body, old_body(event_id).as_bytes(), "{event_id}");
        }
    }
}

fn segment_files(db: &Path) -> Vec<PathBuf> {
    let dir = PathBuf::from(format!("{}-payloads", db.display()));
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "seg"))
        .collect();
    files.sort();
    files
}

/// Sends new events until `stop`, recording each acknowledged one. A
/// request the kill cuts off is not acknowledged and not recorded.
fn ingress(
    url: String,
    round: usize,
    acked: Arc<Mutex<Vec<(String, String)>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let client = client();
        let mut n = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) && n < 5_000 {
            let event_id = format!("new-{round}-{n}");
            n += 1;
            let signed = lab_signed(new_body(&event_id), now());
            let Ok(answer) = send(&client, "POST", &url, &signed).await else {
                continue;
            };
            if answer.status == 200 {
                let id = answer.json()["id"].as_str().unwrap().to_owned();
                acked.lock().unwrap().push((event_id, id));
            }
        }
    })
}

#[tokio::test]
async fn kill9_during_purge_loses_no_acknowledged_event_and_half_purges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let old = preload(&db).await;
    assert_eq!(segment_files(&db).len(), OLD_SEGMENTS);
    let config = TestConfig::new(&db)
        .encrypted()
        .extra("[retention]\nraw_payload = \"1h\"\ndedup = \"1d\"\npurge_interval = \"50ms\"\nbatch = 40")
        .to_string();
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, &config).unwrap();
    let stall = dir.path().join("purge-stall");
    let reached = dir.path().join("purge-stall.reached");
    let failpoint = format!("stall_purge:{}", stall.display());
    let acked = Arc::new(Mutex::new(Vec::new()));

    let mut purged_before = 0;
    for round in 0..ROUNDS {
        std::fs::write(&stall, b"").unwrap();
        let _ = std::fs::remove_file(&reached);
        let mut server = Server::start_binary(
            Path::new(env!("CARGO_BIN_EXE_hookinbox")),
            dir.path(),
            &config_path,
            &[],
            &[("HOOKINBOX_FAILPOINT", &failpoint)],
        );
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let load = ingress(
            server.url("/hooks/lab"),
            round,
            Arc::clone(&acked),
            Arc::clone(&stop),
        );
        assert!(
            eventually(Duration::from_secs(20), || reached.exists()).await,
            "round {round}: the purge never reached its stall point\n{}",
            server.logs()
        );
        // Ingress goes on while the purge is held: wait for acknowledgements
        // that came after the purge's first commit, then kill among them.
        let acked_at_stall = acked.lock().unwrap().len();
        assert!(
            eventually(Duration::from_secs(10), || acked.lock().unwrap().len()
                >= acked_at_stall + 20)
            .await,
            "round {round}: ingress stalled with the purge"
        );
        server.kill9();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        load.await.unwrap();

        // Mid-purge: this round's first batch is committed, and much is
        // still due.
        let purged = old_purged(&db, &old);
        assert!(
            purged > purged_before,
            "round {round}: the kill came before the batch ({purged} purged)"
        );
        assert!(
            purged < old.len(),
            "round {round}: the purge had finished before the kill"
        );
        purged_before = purged;
        let acked_now = acked.lock().unwrap().clone();
        check_after_kill(&db, &old, &acked_now).await;
    }
    // The kills left the emptied segments behind (each batch stopped before
    // its segment op).
    let segments_after_kills = segment_files(&db).len();

    // Unarmed, the purge finishes.
    let _ = std::fs::remove_file(&stall);
    let server = Server::start_with(dir.path(), &config_path);
    let done = eventually(Duration::from_secs(60), || {
        old_purged(&db, &old) == old.len()
            && segment_files(&db).len() < segments_after_kills
            && server.logs().contains("Purged under the retention rules.")
    })
    .await;
    assert!(
        done,
        "the purge did not finish: {} of {} purged\n{}",
        old_purged(&db, &old),
        old.len(),
        server.logs()
    );
    drop(server);
    let (ids, with_body) = rows(&db);
    for (event_id, n) in &old {
        if three_days_old(*n) {
            assert!(!ids.contains_key(event_id), "{event_id} is still there");
        } else {
            assert!(ids.contains_key(event_id), "{event_id} was deleted whole");
            assert!(!with_body.contains(event_id), "{event_id} kept its body");
        }
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= ROUNDS * 20, "{} acknowledged", acked.len());
    check_after_kill(&db, &old, &acked).await;
    // Only segments holding new events' bodies are left.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let referenced: i64 = conn
        .query_row(
            "SELECT count(DISTINCT payload_segment) FROM inbox WHERE payload_segment IS NOT NULL",
            [],
            |row| row.get(0),
        )
        .unwrap();
    let on_disk = segment_files(&db).len() as i64;
    assert!(
        on_disk <= referenced + 1,
        "{on_disk} segments on disk, {referenced} referenced: the kills' leftovers stayed"
    );
}
