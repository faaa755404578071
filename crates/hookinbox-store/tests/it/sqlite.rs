//! SQLite-only behaviour: reopening a file, a lock held by another
//! process, the payload log beside the database, rows from older schemas,
//! and the in-transaction library handler. What every backend must do is in
//! `conformance.rs`.

use crate::support;

use std::sync::Arc;

use hookinbox_store::{AcceptOutcome, SqliteOptions, SqliteStore, Store, StoreError};
use support::{event, event_for_target, inserted, lease_params};

#[tokio::test]
async fn rows_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let id = {
        let store = SqliteStore::open(SqliteOptions::new(&path)).unwrap();
        match store.accept(event("a", "e1", b"{}")).await.unwrap() {
            AcceptOutcome::Inserted { id } => id,
            other => panic!("{other:?}"),
        }
    };
    let store = SqliteStore::open(SqliteOptions::new(&path)).unwrap();
    assert_eq!(
        store.accept(event("a", "e1", b"{}")).await.unwrap(),
        AcceptOutcome::Duplicate { id }
    );
    assert_eq!(store.stats().await.unwrap().total, 1);
}

#[tokio::test]
async fn locked_database_answers_unavailable_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let mut options = SqliteOptions::new(&path);
    options.busy_timeout = std::time::Duration::from_millis(200);
    let store = SqliteStore::open(options).unwrap();
    let blocker = rusqlite::Connection::open(&path).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = store.accept(event("a", "e1", b"{}")).await.unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    blocker.execute_batch("ROLLBACK").unwrap();
    let ok = store.accept(event("a", "e1", b"{}")).await.unwrap();
    assert!(matches!(ok, AcceptOutcome::Inserted { .. }), "{ok:?}");
}

/// Bytes in the SQLite store's payload log, over all its segments.
fn payload_log_bytes(db: &std::path::Path) -> u64 {
    let stats = hookinbox_store::SqliteReader::open(db)
        .unwrap()
        .stats()
        .unwrap();
    stats.disk.unwrap().payload_log_bytes
}

#[tokio::test]
async fn bodies_are_written_once_and_read_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let store = SqliteStore::open(SqliteOptions::new(&path)).unwrap();
    let body: &'static [u8] = b"{\"id\":\"e1\",  \"raw\":true}";
    let id = match store.accept(event("a", "e1", body)).await.unwrap() {
        AcceptOutcome::Inserted { id } => id,
        other => panic!("{other:?}"),
    };
    // A duplicate and a conflict write no second copy.
    store.accept(event("a", "e1", body)).await.unwrap();
    store.accept(event("a", "e1", b"{}")).await.unwrap();
    assert_eq!(payload_log_bytes(&path), body.len() as u64);
    let loaded = store.load_event(&id).await.unwrap().unwrap();
    assert_eq!(loaded.payload.as_deref(), Some(body));
    // Across a reopen too (the writer then appends to a new segment).
    drop(store);
    let store = SqliteStore::open(SqliteOptions::new(&path)).unwrap();
    let second = match store.accept(event("a", "e2", b"[2]")).await.unwrap() {
        AcceptOutcome::Inserted { id } => id,
        other => panic!("{other:?}"),
    };
    let first = store.load_event(&id).await.unwrap().unwrap();
    assert_eq!(first.payload.as_deref(), Some(body));
    let second = store.load_event(&second).await.unwrap().unwrap();
    assert_eq!(second.payload.as_deref(), Some(&b"[2]"[..]));
}

#[tokio::test]
async fn a_body_that_no_longer_matches_its_fingerprint_is_reported_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let store = SqliteStore::open(SqliteOptions::new(&path)).unwrap();
    let id = inserted(
        &(Arc::new(store) as Arc<dyn Store>),
        event("a", "e1", b"{\"amount\":100}"),
    )
    .await;
    let segment = std::path::PathBuf::from(format!("{}-payloads/00000001.seg", path.display()));
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes[11] = b'9'; // {"amount":900}
    std::fs::write(&segment, bytes).unwrap();
    let reader = hookinbox_store::SqliteReader::open(&path).unwrap();
    let err = reader.load_event(&id).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt(_)), "{err:?}");
}

#[tokio::test]
async fn rows_from_before_the_payload_log_keep_their_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let store = SqliteStore::open(SqliteOptions::new(&path)).unwrap();
    let id = inserted(
        &(Arc::new(store) as Arc<dyn Store>),
        event("a", "old", b"{\"old\":1}"),
    )
    .await;
    // As schema 3 stored it: the body in inbox_payload, no log reference.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE inbox SET payload_segment = NULL, payload_offset = NULL, payload_len = NULL",
        [],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO inbox_payload (inbox_id, payload) VALUES (?1, ?2)",
        rusqlite::params![id, &b"{\"old\":1}"[..]],
    )
    .unwrap();
    let reader = hookinbox_store::SqliteReader::open(&path).unwrap();
    let loaded = reader.load_event(&id).unwrap().unwrap();
    assert_eq!(loaded.payload.as_deref(), Some(&b"{\"old\":1}"[..]));
}

/// A handler that books each event into a `booked` table, or fails while
/// `fail` is set.
struct Booking {
    fail: std::sync::atomic::AtomicBool,
}

impl hookinbox_store::SqliteHandler for Booking {
    fn handle(
        &self,
        conn: &rusqlite::Connection,
        event: &hookinbox_store::HandledEvent<'_>,
    ) -> Result<(), hookinbox_store::HandlerError> {
        let fail = |e: rusqlite::Error| hookinbox_store::HandlerError(e.to_string());
        conn.execute(
            "CREATE TABLE IF NOT EXISTS booked (inbox_id TEXT PRIMARY KEY)",
            [],
        )
        .map_err(fail)?;
        conn.execute(
            "INSERT INTO booked (inbox_id) VALUES (?1)",
            [event.inbox_id],
        )
        .map_err(fail)?;
        if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
            // After its own write: the rollback must undo it.
            return Err(hookinbox_store::HandlerError("ledger closed".into()));
        }
        Ok(())
    }
}

fn booked(db: &std::path::Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let Ok(mut statement) = conn.prepare("SELECT inbox_id FROM booked ORDER BY inbox_id") else {
        return Vec::new(); // the handler never committed its table
    };
    statement
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn delivery_status(db: &std::path::Path) -> (String, i64) {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row("SELECT status, attempts FROM delivery", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap()
}

#[tokio::test]
async fn a_handler_commits_with_delivered_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let store = Arc::new(SqliteStore::open(SqliteOptions::new(&path)).unwrap());
    let handler = Arc::new(Booking {
        fail: std::sync::atomic::AtomicBool::new(true),
    });
    let dyn_store: Arc<dyn Store> = store.clone();
    let id = inserted(&dyn_store, event_for_target("h1", None)).await;
    let lease = dyn_store.lease(lease_params("w1", 1_000)).await.unwrap();
    let event = dyn_store.load_event(&id).await.unwrap().unwrap();

    // The handler fails after writing: its write and the DELIVERED marker
    // are both rolled back, and the lease is still held for settling.
    let failed = store
        .deliver_to_handler(lease[0].clone(), event.clone(), handler.clone(), 1_001)
        .await;
    assert!(matches!(failed, Err(StoreError::Handler(_))), "{failed:?}");
    assert!(booked(&path).is_empty());
    assert_eq!(delivery_status(&path), ("LEASED".to_owned(), 0));

    // The next attempt applies: the booking and DELIVERED commit together.
    handler
        .fail
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let applied = store
        .deliver_to_handler(lease[0].clone(), event.clone(), handler.clone(), 1_002)
        .await
        .unwrap();
    assert_eq!(applied, hookinbox_store::HandlerDelivery::Applied);
    assert_eq!(booked(&path), vec![id.clone()]);
    assert_eq!(delivery_status(&path), ("DELIVERED".to_owned(), 1));
    assert_eq!(
        dyn_store.stats().await.unwrap().by_status.get("PROCESSED"),
        Some(&1)
    );

    // The same lease again (a late duplicate attempt): the handler does not run.
    let again = store
        .deliver_to_handler(lease[0].clone(), event, handler, 1_003)
        .await
        .unwrap();
    assert_eq!(again, hookinbox_store::HandlerDelivery::LeaseLost);
    assert_eq!(booked(&path), vec![id]);
}

#[tokio::test]
async fn a_handler_does_not_run_under_a_lease_that_was_reclaimed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let store = Arc::new(SqliteStore::open(SqliteOptions::new(&path)).unwrap());
    let handler = Arc::new(Booking {
        fail: std::sync::atomic::AtomicBool::new(false),
    });
    let dyn_store: Arc<dyn Store> = store.clone();
    let id = inserted(&dyn_store, event_for_target("h2", None)).await;
    let stale = dyn_store.lease(lease_params("w1", 1_000)).await.unwrap();
    let event = dyn_store.load_event(&id).await.unwrap().unwrap();
    // w1 stalls past its lease; the rescuer reclaims it and w2 takes it.
    assert_eq!(dyn_store.reclaim_expired(1_000 + 31_000).await.unwrap(), 1);
    let current = dyn_store.lease(lease_params("w2", 32_000)).await.unwrap();
    assert_eq!(current.len(), 1);

    let late = store
        .deliver_to_handler(stale[0].clone(), event.clone(), handler.clone(), 32_001)
        .await
        .unwrap();
    assert_eq!(late, hookinbox_store::HandlerDelivery::LeaseLost);
    assert!(booked(&path).is_empty(), "the stale worker applied nothing");
    let applied = store
        .deliver_to_handler(current[0].clone(), event, handler, 32_002)
        .await
        .unwrap();
    assert_eq!(applied, hookinbox_store::HandlerDelivery::Applied);
    assert_eq!(booked(&path), vec![id]);
}

fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The database, its -wal and -shm, the payload directory and a segment.
fn storage_paths(db: &std::path::Path) -> [std::path::PathBuf; 5] {
    let with = |suffix: &str| std::path::PathBuf::from(format!("{}{suffix}", db.display()));
    [
        db.to_owned(),
        with("-wal"),
        with("-shm"),
        with("-payloads"),
        with("-payloads/00000001.seg"),
    ]
}

#[tokio::test]
async fn new_storage_files_are_private_whatever_the_umask() {
    // The test process runs with the usual umask (022): files created the
    // ordinary way would be 0644 and directories 0755.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    // Kept open while the modes are looked at: the last connection to
    // close removes the -wal and -shm.
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(SqliteOptions::new(&path)).unwrap());
    inserted(&store, event("a", "e1", b"{}")).await;
    let [db, wal, shm, payloads, segment] = storage_paths(&path);
    assert_eq!(mode_of(&db), 0o600, "database");
    assert_eq!(mode_of(&wal), 0o600, "-wal");
    assert_eq!(mode_of(&shm), 0o600, "-shm");
    assert_eq!(mode_of(&payloads), 0o700, "payload directory");
    assert_eq!(mode_of(&segment), 0o600, "segment");
}

#[tokio::test]
async fn storage_files_left_readable_by_others_are_made_private_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    drop(SqliteStore::open(SqliteOptions::new(&path)).unwrap());
    let [db, wal, shm, payloads, old_segment] = storage_paths(&path);
    // As a build before private modes (or a copy by hand) left them.
    std::fs::create_dir_all(&payloads).unwrap();
    std::fs::write(&old_segment, b"").unwrap();
    for file in [&db, &wal, &shm, &old_segment] {
        if !file.exists() {
            std::fs::write(file, b"").unwrap();
        }
        set_mode(file, 0o644);
    }
    set_mode(&payloads, 0o755);

    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(SqliteOptions::new(&path)).unwrap());
    let id = inserted(&store, event("a", "e1", b"{\"after\":1}")).await;
    let new_segment = std::path::PathBuf::from(format!("{}/00000002.seg", payloads.display()));
    assert!(new_segment.exists(), "the body went to a new segment");
    for file in [&db, &wal, &shm, &old_segment, &new_segment] {
        assert_eq!(mode_of(file), 0o600, "{}", file.display());
    }
    assert_eq!(mode_of(&payloads), 0o700);
    let loaded = store.load_event(&id).await.unwrap().unwrap();
    assert_eq!(loaded.payload.as_deref(), Some(&b"{\"after\":1}"[..]));
}

fn keys(id: &str, byte: u8) -> Option<Arc<hookinbox_store::EncryptionKeys>> {
    Some(Arc::new(
        hookinbox_store::EncryptionKeys::new(id, secrecy::SecretBox::new(Box::new([byte; 32])))
            .unwrap(),
    ))
}

#[tokio::test]
async fn rewrap_appends_resealed_bodies_and_moves_old_rows_out_of_inbox_payload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let (legacy, logged) = {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(SqliteOptions::new(&path)).unwrap());
        (
            inserted(&store, event("a", "legacy", b"{\"legacy\":1}")).await,
            inserted(&store, event("a", "logged", b"{\"logged\":1}")).await,
        )
    };
    // The first row as schema 3 stored it: its body in inbox_payload.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE inbox SET payload_segment = NULL, payload_offset = NULL, payload_len = NULL
         WHERE id = ?1",
        [&legacy],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO inbox_payload (inbox_id, payload) VALUES (?1, ?2)",
        rusqlite::params![legacy, &b"{\"legacy\":1}"[..]],
    )
    .unwrap();
    let segment_1 = std::path::PathBuf::from(format!("{}-payloads/00000001.seg", path.display()));
    let before = std::fs::read(&segment_1).unwrap();

    let mut options = SqliteOptions::new(&path);
    options.keys = keys("k1", 1);
    let store = SqliteStore::open(options).unwrap();
    let progress = store.rewrap_batch(10).await.unwrap();
    assert_eq!((progress.rewrapped, progress.remaining), (2, 0));

    // Both sealed bodies went to a new segment; the old one, referenced by
    // no row once the rewrap completed, is gone with its plain bytes.
    assert!(!before.is_empty());
    assert!(!segment_1.exists(), "the old plain segment is kept");
    let in_inbox_payload: i64 = conn
        .query_row("SELECT count(*) FROM inbox_payload", [], |r| r.get(0))
        .unwrap();
    assert_eq!(in_inbox_payload, 0, "the legacy body moved to the log");
    let segments: Vec<(i64, String)> = conn
        .prepare("SELECT payload_segment, payload_key_id FROM inbox ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // One new segment for both (numbers are unique, not dense: a restart
    // may skip the spare number its predecessor took ahead).
    assert_eq!(segments.len(), 2);
    assert!(
        segments[0].0 > 1 && segments[0] == segments[1] && segments[0].1 == "k1",
        "{segments:?}"
    );
    for (id, body) in [
        (&legacy, &b"{\"legacy\":1}"[..]),
        (&logged, b"{\"logged\":1}"),
    ] {
        let loaded = store.load_event(id).await.unwrap().unwrap();
        assert_eq!(loaded.payload.as_deref(), Some(body));
    }
}

fn segment_file(db: &std::path::Path, segment: u32) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("{}-payloads/{segment:08}.seg", db.display()))
}

fn accepted_at(id: &str, body: &'static [u8], received_at_ms: i64) -> hookinbox_store::NewEvent {
    let mut event = event("a", id, body);
    event.received_at_ms = received_at_ms;
    event
}

#[tokio::test]
async fn a_segment_goes_once_no_row_references_it_the_one_being_written_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(SqliteOptions::new(&path)).unwrap());
        inserted(&store, accepted_at("e1", b"{\"n\":1}", 1_000)).await;
        inserted(&store, accepted_at("e2", b"{\"n\":2}", 2_000)).await;
    }
    // A restart: the writer now appends to a new segment (`current`).
    let store = SqliteStore::open(SqliteOptions::new(&path)).unwrap();
    let young = match store
        .accept(accepted_at("e3", b"{\"n\":3}", 90_000))
        .await
        .unwrap()
    {
        AcceptOutcome::Inserted { id } => id,
        other => panic!("{other:?}"),
    };
    let raw = hookinbox_store::RetentionPolicy {
        raw_payload: Some(std::time::Duration::from_secs(10)),
        ..Default::default()
    };
    let progress = store.purge_batch(&raw, 100_000, 10).await.unwrap();
    assert_eq!(progress.purged.raw_payloads, 2);
    assert_eq!(progress.segments_deleted, 1);
    assert!(
        !segment_file(&path, 1).exists(),
        "nothing references segment 1"
    );
    let current = *segments_on_disk(&path).last().unwrap();
    assert_eq!(segments_on_disk(&path), [current]);
    assert!(current > 1);

    // Every row of the current segment gone too: the writer leaves it, and it goes.
    let dedup = hookinbox_store::RetentionPolicy {
        dedup: Some(std::time::Duration::from_secs(1)),
        ..Default::default()
    };
    let progress = store.purge_batch(&dedup, 1_000_000, 10).await.unwrap();
    assert_eq!((progress.purged.events, progress.segments_deleted), (3, 1));
    assert!(!segment_file(&path, current).exists());
    assert_eq!(store.load_event(&young).await.unwrap(), None);
    let next = match store
        .accept(accepted_at("e4", b"{\"n\":4}", 1_000_000))
        .await
        .unwrap()
    {
        AcceptOutcome::Inserted { id } => id,
        other => panic!("{other:?}"),
    };
    let loaded = store.load_event(&next).await.unwrap().unwrap();
    assert_eq!(loaded.payload.as_deref(), Some(&b"{\"n\":4}"[..]));
    let next_segment = *segments_on_disk(&path).last().unwrap();
    assert!(next_segment > current, "never a number used before");
    assert!(segment_file(&path, next_segment).exists());
}

/// The segment numbers in the payload log of `db`, sorted.
fn segments_on_disk(db: &std::path::Path) -> Vec<u32> {
    let dir = format!("{}-payloads", db.display());
    let mut numbers: Vec<u32> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name();
            name.to_str()?.strip_suffix(".seg")?.parse().ok()
        })
        .collect();
    numbers.sort_unstable();
    numbers
}

/// A body of `len` bytes, as the `&'static` the event helper takes:
/// the tag, then bytes zstd cannot shrink, so that it is stored at its own
/// length, uncompressed, and the segment sizes below are the bodies'.
fn padded(tag: &str, len: usize) -> &'static [u8] {
    let mut body = tag.as_bytes().to_vec();
    let mut state = len as u64;
    while body.len() < len {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        body.push((state >> 56) as u8);
    }
    body.truncate(len);
    Vec::leak(body)
}

#[tokio::test]
async fn a_sparse_segment_is_compacted_even_the_one_being_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let store = SqliteStore::open(SqliteOptions::new(&path)).unwrap();
    for n in 0..10 {
        let id = format!("old-{n}");
        store
            .accept(accepted_at(&id, padded(&id, 1000), 1_000))
            .await
            .unwrap();
    }
    let kept = match store
        .accept(accepted_at("young", padded("young", 500), 90_000))
        .await
        .unwrap()
    {
        AcceptOutcome::Inserted { id } => id,
        other => panic!("{other:?}"),
    };
    let raw = hookinbox_store::RetentionPolicy {
        raw_payload: Some(std::time::Duration::from_secs(10)),
        ..Default::default()
    };
    // Segment 1, the writer's, keeps 500 live bytes of 10,500: its live
    // body is copied forward, and the segment goes.
    let progress = store.purge_batch(&raw, 100_000, 100).await.unwrap();
    assert_eq!(progress.purged.raw_payloads, 10);
    assert_eq!(progress.segments_deleted, 1);
    assert_eq!(segments_on_disk(&path), [2]);
    assert_eq!(
        std::fs::metadata(segment_file(&path, 2)).unwrap().len(),
        500
    );
    let loaded = store.load_event(&kept).await.unwrap().unwrap();
    assert_eq!(loaded.payload.as_deref(), Some(padded("young", 500)));

    // Half live is not sparse: nothing is copied.
    store
        .accept(accepted_at("old-again", padded("old-again", 500), 1_000))
        .await
        .unwrap();
    let progress = store.purge_batch(&raw, 100_000, 100).await.unwrap();
    assert_eq!(
        (progress.purged.raw_payloads, progress.segments_deleted),
        (1, 0)
    );
    assert_eq!(segments_on_disk(&path), [2]);
}

#[tokio::test]
async fn a_rewrap_leaves_no_segment_holding_old_key_bytes_even_the_one_being_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let key = |byte: u8| secrecy::SecretBox::new(Box::new([byte; 32]));
    {
        let mut options = SqliteOptions::new(&path);
        options.keys = keys("k1", 1);
        let store = SqliteStore::open(options).unwrap();
        for n in 0..10 {
            let id = format!("old-{n}");
            store
                .accept(accepted_at(&id, padded(&id, 1000), 1_000))
                .await
                .unwrap();
        }
        store
            .accept(accepted_at("young", padded("young", 500), 90_000))
            .await
            .unwrap();
    }
    let mut options = SqliteOptions::new(&path);
    options.keys = Some(Arc::new(
        hookinbox_store::EncryptionKeys::new("k2", key(2))
            .unwrap()
            .with_key("k1", key(1))
            .unwrap(),
    ));
    let store = SqliteStore::open(options).unwrap();
    // The purge copies the young k1 body into this writer's segment 2.
    let raw = hookinbox_store::RetentionPolicy {
        raw_payload: Some(std::time::Duration::from_secs(10)),
        ..Default::default()
    };
    store.purge_batch(&raw, 100_000, 100).await.unwrap();
    let written = segments_on_disk(&path);
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(written[0] > 1, "{written:?}");

    // Its re-sealed copy goes to a new segment, not beside the old one
    // (the ten purged rows are re-sealed too: their audit headers).
    let progress = store.rewrap_batch(100).await.unwrap();
    assert_eq!((progress.rewrapped, progress.remaining), (11, 0));
    let resealed = segments_on_disk(&path);
    assert_eq!(resealed.len(), 1, "{resealed:?}");
    assert!(resealed[0] > written[0], "{resealed:?} after {written:?}");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (segment, key_id): (i64, String) = conn
        .query_row(
            "SELECT payload_segment, payload_key_id FROM inbox WHERE payload_segment IS NOT NULL",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((segment, key_id.as_str()), (i64::from(resealed[0]), "k2"));
}

#[tokio::test]
async fn a_writer_whose_segment_another_process_purged_moves_to_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let serving = SqliteStore::open(SqliteOptions::new(&path)).unwrap();
    serving
        .accept(accepted_at("e1", b"{\"n\":1}", 1_000))
        .await
        .unwrap();
    // Another process (say the CLI) purges every body; the serving
    // writer's segment 1 is referenced by nothing, and is not the CLI's.
    let cli = SqliteStore::open(SqliteOptions::new(&path)).unwrap();
    let raw = hookinbox_store::RetentionPolicy {
        raw_payload: Some(std::time::Duration::from_secs(1)),
        ..Default::default()
    };
    let progress = cli.purge_batch(&raw, 100_000, 10).await.unwrap();
    assert_eq!(progress.segments_deleted, 1);
    assert!(!segment_file(&path, 1).exists());

    // The serving writer must not append to the deleted file, nor make a
    // file under its number again: it notices at its next batch and the
    // event lands in a new segment at once, readable.
    let id = match serving
        .accept(accepted_at("e2", b"{\"n\":2}", 200_000))
        .await
        .unwrap()
    {
        AcceptOutcome::Inserted { id } => id,
        other => panic!("{other:?}"),
    };
    let loaded = serving.load_event(&id).await.unwrap().unwrap();
    assert_eq!(loaded.payload.as_deref(), Some(&b"{\"n\":2}"[..]));
    assert!(!segment_file(&path, 1).exists());
    assert!(segment_file(&path, 2).exists());
}

/// Purge means gone (docs/architecture.md §6): the accepts' frames stay in
/// the WAL until it is truncated, and a truncation a busy store refused is
/// owed, so the next purge does it even when it purges nothing.
#[tokio::test]
async fn a_wal_truncation_a_reader_blocked_is_done_by_the_next_purge() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.db");
    let wal = dir.path().join("inbox.db-wal");
    let store = SqliteStore::open(SqliteOptions::new(&path)).unwrap();
    for n in 0..3 {
        let id = format!("old-{n}");
        store
            .accept(accepted_at(&id, padded(&id, 1000), 1_000))
            .await
            .unwrap();
    }
    let raw = hookinbox_store::RetentionPolicy {
        raw_payload: Some(std::time::Duration::from_secs(10)),
        ..Default::default()
    };
    // A reader on an old snapshot: the truncation cannot run.
    let reader = rusqlite::Connection::open(&path).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let rows: i64 = reader
        .query_row("SELECT count(*) FROM inbox", [], |row| row.get(0))
        .unwrap();
    assert_eq!(rows, 3);
    let progress = store.purge_batch(&raw, 100_000, 10).await.unwrap();
    assert_eq!(progress.purged.raw_payloads, 3);
    assert!(std::fs::metadata(&wal).unwrap().len() > 0);

    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    let progress = store.purge_batch(&raw, 100_000, 10).await.unwrap();
    assert_eq!(progress.purged.raw_payloads, 0, "nothing left to purge");
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        0,
        "the owed truncation was done by the purge that purged nothing"
    );
}
