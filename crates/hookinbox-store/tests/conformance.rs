//! The behaviour every `Store` must have, run against each backend.

use std::sync::Arc;

use bytes::Bytes;
use hookinbox_store::{
    AcceptOutcome, Fingerprint, LeaseParams, NewEvent, ReplaySelector, SettleRequest, Settlement,
    SqliteOptions, SqliteStore, Store, StoreError, UnsignedMetadata,
};

/// A test factory: an event with defaults for everything a test does not care about.
fn event(endpoint: &str, id: &str, body: &'static [u8]) -> NewEvent {
    NewEvent {
        endpoint_id: endpoint.into(),
        provider: "lab".into(),
        provider_event_id: id.into(),
        event_type: Some("t".into()),
        object_id: None,
        object_version: None,
        provider_created_at: None,
        received_at_ms: 1_700_000_000_000,
        content_type: Some("application/json".into()),
        payload: Bytes::from_static(body),
        fingerprint: Fingerprint::of(body),
        audit_headers: vec![("x-timestamp".into(), "1".into())],
        matched_secret_version: "1".into(),
        targets: vec![],
        unsigned_metadata: UnsignedMetadata::default(),
        fingerprint_window_ms: None,
    }
}

/// The redelivery window of the unsigned-id events below, in milliseconds.
const WINDOW_MS: i64 = 3_600_000;

/// An event whose id came from an unsigned header (as GitHub's delivery id
/// does), received at `received_at_ms`, with one target `t`.
fn unsigned_id_event(id: &str, body: &'static [u8], received_at_ms: i64) -> NewEvent {
    let mut event = event("a", id, body);
    event.unsigned_metadata = UnsignedMetadata {
        event_id: true,
        event_type: true,
    };
    event.fingerprint_window_ms = Some(WINDOW_MS);
    event.received_at_ms = received_at_ms;
    event.targets = vec!["t".into()];
    event
}

/// An event with one target `t` and, when given, an object id and version.
fn event_for_target(id: &str, object: Option<(&str, i64)>) -> NewEvent {
    let mut event = event("a", id, b"{}");
    event.targets = vec!["t".into()];
    // Due from t = 500 ms on; the tests lease at t >= 1000.
    event.received_at_ms = 500;
    if let Some((object_id, version)) = object {
        event.object_id = Some(object_id.into());
        event.object_version = Some(version);
    }
    event
}

fn lease_params(owner: &str, now_ms: i64) -> LeaseParams {
    LeaseParams {
        endpoint_id: "a".into(),
        target: "t".into(),
        owner: owner.into(),
        max: 10,
        now_ms,
        lease_ms: 30_000,
    }
}

async fn inserted(store: &Arc<dyn Store>, event: NewEvent) -> String {
    match store.accept(event).await.unwrap() {
        AcceptOutcome::Inserted { id } => id,
        other => panic!("{other:?}"),
    }
}

fn sqlite() -> (tempfile::TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(SqliteOptions::new(dir.path().join("inbox.db"))).unwrap();
    (dir, Arc::new(store))
}

async fn same_event_twice_is_a_duplicate_of_the_same_row(store: Arc<dyn Store>) {
    let first = store.accept(event("a", "e1", b"{}")).await.unwrap();
    let AcceptOutcome::Inserted { id } = first else {
        panic!("{first:?}")
    };
    let second = store.accept(event("a", "e1", b"{}")).await.unwrap();
    assert_eq!(second, AcceptOutcome::Duplicate { id: id.clone() });
    let conflict = store.accept(event("a", "e1", b"{\"x\":1}")).await.unwrap();
    assert_eq!(conflict, AcceptOutcome::Conflict { id });
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.total, 1);
}

async fn ids_are_scoped_per_endpoint(store: Arc<dyn Store>) {
    let a = store.accept(event("a", "e1", b"{}")).await.unwrap();
    let b = store.accept(event("b", "e1", b"{}")).await.unwrap();
    assert!(matches!(a, AcceptOutcome::Inserted { .. }));
    assert!(matches!(b, AcceptOutcome::Inserted { .. }));
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.by_endpoint["a"]["ACCEPTED"], 1);
    assert_eq!(stats.by_endpoint["b"]["ACCEPTED"], 1);
    assert_eq!(stats.by_status["ACCEPTED"], 2);
}

async fn concurrent_copies_insert_exactly_once(store: Arc<dyn Store>) {
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.accept(event("a", "same", b"{\"v\":1}")).await })
        })
        .collect();
    let mut inserted = 0;
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        match task.await.unwrap().unwrap() {
            AcceptOutcome::Inserted { id } => {
                inserted += 1;
                ids.insert(id);
            }
            AcceptOutcome::Duplicate { id } => {
                ids.insert(id);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(inserted, 1);
    assert_eq!(ids.len(), 1, "every copy must name the same inbox row");
    assert_eq!(store.stats().await.unwrap().total, 1);
}

async fn a_copy_under_a_new_unsigned_id_inside_the_window_is_the_same_event(store: Arc<dyn Store>) {
    let t0 = 1_700_000_000_000;
    let original = inserted(&store, unsigned_id_event("d-1", b"{\"push\":1}", t0)).await;
    // The same body under a new delivery id, at the last millisecond of the window.
    let copy = unsigned_id_event("d-2", b"{\"push\":1}", t0 + WINDOW_MS);
    assert_eq!(
        store.accept(copy).await.unwrap(),
        AcceptOutcome::Duplicate {
            id: original.clone()
        }
    );
    assert_eq!(store.stats().await.unwrap().total, 1, "no second row");
    let leased = store
        .lease(lease_params("w", t0 + WINDOW_MS))
        .await
        .unwrap();
    assert_eq!(leased.len(), 1, "no second delivery: {leased:?}");
    assert_eq!(leased[0].inbox_id, original);
    // The row says which metadata was unsigned.
    let stored = store.load_event(&original).await.unwrap().unwrap();
    assert_eq!(
        stored.unsigned_metadata,
        UnsignedMetadata {
            event_id: true,
            event_type: true
        }
    );
}

async fn a_copy_under_a_new_unsigned_id_after_the_window_is_a_new_event(store: Arc<dyn Store>) {
    let t0 = 1_700_000_000_000;
    let original = inserted(&store, unsigned_id_event("d-1", b"{\"push\":1}", t0)).await;
    let later = inserted(
        &store,
        unsigned_id_event("d-2", b"{\"push\":1}", t0 + WINDOW_MS + 1),
    )
    .await;
    assert_ne!(original, later);
    assert_eq!(store.stats().await.unwrap().total, 2);
}

async fn the_event_id_is_checked_before_the_fingerprint(store: Arc<dyn Store>) {
    let t0 = 1_700_000_000_000;
    inserted(&store, unsigned_id_event("d-1", b"{\"a\":1}", t0)).await;
    let second = inserted(&store, unsigned_id_event("d-2", b"{\"b\":1}", t0)).await;
    // d-2 again, with d-1's body: the id is taken by another body, whatever
    // the fingerprint also matches.
    assert_eq!(
        store
            .accept(unsigned_id_event("d-2", b"{\"a\":1}", t0 + 1))
            .await
            .unwrap(),
        AcceptOutcome::Conflict { id: second.clone() }
    );
    // And d-2 with its own body is an ordinary duplicate.
    assert_eq!(
        store
            .accept(unsigned_id_event("d-2", b"{\"b\":1}", t0 + 1))
            .await
            .unwrap(),
        AcceptOutcome::Duplicate { id: second }
    );
}

async fn concurrent_copies_under_new_unsigned_ids_insert_exactly_once(store: Arc<dyn Store>) {
    let t0 = 1_700_000_000_000;
    let tasks: Vec<_> = (0..100)
        .map(|n| {
            let store = Arc::clone(&store);
            let copy = unsigned_id_event(&format!("d-{n}"), b"{\"push\":1}", t0 + n);
            tokio::spawn(async move { store.accept(copy).await })
        })
        .collect();
    let mut inserted = 0;
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        match task.await.unwrap().unwrap() {
            AcceptOutcome::Inserted { id } => {
                inserted += 1;
                ids.insert(id);
            }
            AcceptOutcome::Duplicate { id } => {
                ids.insert(id);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(inserted, 1);
    assert_eq!(ids.len(), 1, "every copy must name the same inbox row");
    assert_eq!(store.stats().await.unwrap().total, 1);
}

async fn signed_ids_with_one_body_are_two_events(store: Arc<dyn Store>) {
    let first = inserted(&store, event("a", "evt_1", b"{\"same\":1}")).await;
    let second = inserted(&store, event("a", "evt_2", b"{\"same\":1}")).await;
    assert_ne!(first, second);
    assert_eq!(store.stats().await.unwrap().total, 2);
    let stored = store.load_event(&first).await.unwrap().unwrap();
    assert!(stored.unsigned_metadata.is_empty());
}

#[tokio::test]
async fn sqlite_a_copy_under_a_new_unsigned_id_inside_the_window_is_the_same_event() {
    let (_dir, store) = sqlite();
    a_copy_under_a_new_unsigned_id_inside_the_window_is_the_same_event(store).await;
}

#[tokio::test]
async fn sqlite_a_copy_under_a_new_unsigned_id_after_the_window_is_a_new_event() {
    let (_dir, store) = sqlite();
    a_copy_under_a_new_unsigned_id_after_the_window_is_a_new_event(store).await;
}

#[tokio::test]
async fn sqlite_the_event_id_is_checked_before_the_fingerprint() {
    let (_dir, store) = sqlite();
    the_event_id_is_checked_before_the_fingerprint(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_concurrent_copies_under_new_unsigned_ids_insert_exactly_once() {
    let (_dir, store) = sqlite();
    concurrent_copies_under_new_unsigned_ids_insert_exactly_once(store).await;
}

#[tokio::test]
async fn sqlite_signed_ids_with_one_body_are_two_events() {
    let (_dir, store) = sqlite();
    signed_ids_with_one_body_are_two_events(store).await;
}

#[tokio::test]
async fn sqlite_duplicates_and_conflicts() {
    let (_dir, store) = sqlite();
    same_event_twice_is_a_duplicate_of_the_same_row(store).await;
}

#[tokio::test]
async fn sqlite_ids_are_scoped_per_endpoint() {
    let (_dir, store) = sqlite();
    ids_are_scoped_per_endpoint(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_concurrent_copies_insert_exactly_once() {
    let (_dir, store) = sqlite();
    concurrent_copies_insert_exactly_once(store).await;
}

#[tokio::test]
async fn sqlite_rows_survive_reopen() {
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
async fn sqlite_locked_database_answers_unavailable_and_recovers() {
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

async fn delivered_event_becomes_processed(store: Arc<dyn Store>) {
    let id = inserted(&store, event_for_target("d1", None)).await;
    let leased = store.lease(lease_params("w1", 1_000)).await.unwrap();
    assert_eq!(leased.len(), 1);
    assert_eq!(leased[0].inbox_id, id);
    assert!(
        store
            .lease(lease_params("w2", 1_000))
            .await
            .unwrap()
            .is_empty(),
        "leased rows are not leased twice"
    );
    assert!(store
        .settle(&leased[0], Settlement::Delivered, 1_001)
        .await
        .unwrap());
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.by_status.get("PROCESSED"), Some(&1));
}

async fn retries_wait_and_dead_fails_then_replay_delivers(store: Arc<dyn Store>) {
    let id = inserted(&store, event_for_target("r1", None)).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    let retry = Settlement::Retry {
        next_attempt_at_ms: 5_000,
        error: "http 500".into(),
    };
    assert!(store.settle(&leased[0], retry, 1_001).await.unwrap());
    assert!(
        store
            .lease(lease_params("w", 4_999))
            .await
            .unwrap()
            .is_empty(),
        "not due yet"
    );
    let leased = store.lease(lease_params("w", 5_000)).await.unwrap();
    assert_eq!(leased[0].attempts, 1);
    assert!(store
        .settle(
            &leased[0],
            Settlement::Dead {
                error: "http 500".into()
            },
            5_001
        )
        .await
        .unwrap());
    assert_eq!(
        store.stats().await.unwrap().by_status.get("FAILED"),
        Some(&1)
    );

    let replayed = store
        .replay(ReplaySelector::Failed { since_ms: None }, 6_000)
        .await
        .unwrap();
    assert_eq!(replayed, vec![id.clone()]);
    assert_eq!(
        store.stats().await.unwrap().by_status.get("ACCEPTED"),
        Some(&1)
    );
    let leased = store.lease(lease_params("w", 6_000)).await.unwrap();
    assert_eq!(leased.len(), 1);
    assert_eq!(
        leased[0].inbox_id, id,
        "same inbox id: same idempotency key"
    );
    assert_eq!(leased[0].attempts, 0, "a replay has a fresh budget");
    assert!(store
        .settle(&leased[0], Settlement::Delivered, 6_001)
        .await
        .unwrap());
    assert_eq!(
        store.stats().await.unwrap().by_status.get("PROCESSED"),
        Some(&1)
    );
}

async fn expired_leases_are_reclaimed_and_the_old_owner_cannot_settle(store: Arc<dyn Store>) {
    inserted(&store, event_for_target("l1", None)).await;
    let mut params = lease_params("crashed", 1_000);
    params.lease_ms = 100;
    let old = store.lease(params).await.unwrap();
    assert_eq!(
        store.reclaim_expired(1_050).await.unwrap(),
        0,
        "not expired yet"
    );
    assert_eq!(store.reclaim_expired(1_101).await.unwrap(), 1);
    let new = store.lease(lease_params("alive", 1_102)).await.unwrap();
    assert_eq!(new.len(), 1);
    assert!(
        !store
            .settle(&old[0], Settlement::Delivered, 1_103)
            .await
            .unwrap(),
        "a lost lease settles nothing"
    );
    assert!(!store.heartbeat(&old[0], 9_999).await.unwrap());
    assert!(store.heartbeat(&new[0], 9_999).await.unwrap());
    assert!(store
        .settle(&new[0], Settlement::Delivered, 1_104)
        .await
        .unwrap());
}

async fn one_object_goes_out_one_version_at_a_time_in_order(store: Arc<dyn Store>) {
    for (n, version) in [(1, 2), (2, 3), (3, 1)] {
        inserted(
            &store,
            event_for_target(&format!("o{n}"), Some(("obj", version))),
        )
        .await;
    }
    inserted(&store, event_for_target("free", None)).await;
    let mut delivered_versions = Vec::new();
    let mut now = 1_000;
    loop {
        let leased = store.lease(lease_params("w", now)).await.unwrap();
        if leased.is_empty() {
            break;
        }
        let ordered: Vec<_> = leased.iter().filter(|l| l.inbox_id != "free").collect();
        assert!(
            ordered.len() <= 2,
            "at most one ordered delivery plus the free one: {leased:?}"
        );
        for lease in &leased {
            let event = store.load_event(&lease.inbox_id).await.unwrap().unwrap();
            if let Some(version) = event.object_version {
                delivered_versions.push(version);
            }
            assert!(store
                .settle(lease, Settlement::Delivered, now)
                .await
                .unwrap());
        }
        now += 1;
    }
    assert_eq!(delivered_versions, vec![1, 2, 3]);
}

async fn versions_not_newer_than_delivered_are_skipped_stale(store: Arc<dyn Store>) {
    inserted(&store, event_for_target("v3", Some(("obj", 3)))).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    assert!(store
        .settle(&leased[0], Settlement::Delivered, 1_000)
        .await
        .unwrap());
    inserted(&store, event_for_target("v1", Some(("obj", 1)))).await;
    inserted(&store, event_for_target("v2", Some(("obj", 2)))).await;
    inserted(&store, event_for_target("v3b", Some(("obj", 3)))).await;
    assert!(
        store
            .lease(lease_params("w", 1_001))
            .await
            .unwrap()
            .is_empty(),
        "1, 2 and another 3 are all stale"
    );
    let stats = store.stats().await.unwrap();
    assert_eq!(
        stats.by_status.get("PROCESSED"),
        Some(&4),
        "stale events are processed no-ops"
    );
    inserted(&store, event_for_target("v4", Some(("obj", 4)))).await;
    assert_eq!(
        store.lease(lease_params("w", 1_002)).await.unwrap().len(),
        1
    );
}

async fn settle_many_records_each_outcome_under_its_own_lease(store: Arc<dyn Store>) {
    for id in ["m1", "m2", "m3"] {
        inserted(&store, event_for_target(id, None)).await;
    }
    inserted(&store, event_for_target("m4", Some(("obj", 1)))).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    assert_eq!(leased.len(), 4);
    assert_eq!(
        leased.iter().filter(|l| l.ordered).count(),
        1,
        "the lease says which deliveries belong to an ordered object"
    );
    let mut lost = leased[2].clone();
    lost.owner = "someone-else".into();
    let request = |lease, settlement| SettleRequest {
        lease,
        settlement,
        now_ms: 1_001,
    };
    let settled = store
        .settle_many(vec![
            request(leased[0].clone(), Settlement::Delivered),
            request(
                leased[1].clone(),
                Settlement::Retry {
                    next_attempt_at_ms: 5_000,
                    error: "http 503".into(),
                },
            ),
            request(lost, Settlement::Delivered),
            request(leased[3].clone(), Settlement::Delivered),
        ])
        .await
        .unwrap();
    assert_eq!(
        settled,
        vec![true, true, false, true],
        "a lost lease settles nothing"
    );
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.by_status.get("PROCESSED"), Some(&2));
    assert_eq!(stats.by_status.get("ACCEPTED"), Some(&2));
    assert!(
        store
            .lease(lease_params("w", 1_002))
            .await
            .unwrap()
            .is_empty(),
        "the unsettled lease is still held; the retry is not due"
    );
    let retried = store.lease(lease_params("w", 5_000)).await.unwrap();
    assert_eq!(retried.len(), 1);
    assert_eq!(retried[0].attempts, 1);
}

#[tokio::test]
async fn sqlite_settle_many() {
    let (_dir, store) = sqlite();
    settle_many_records_each_outcome_under_its_own_lease(store).await;
}

#[tokio::test]
async fn sqlite_delivered_event_becomes_processed() {
    let (_dir, store) = sqlite();
    delivered_event_becomes_processed(store).await;
}

#[tokio::test]
async fn sqlite_retries_wait_and_dead_fails_then_replay_delivers() {
    let (_dir, store) = sqlite();
    retries_wait_and_dead_fails_then_replay_delivers(store).await;
}

#[tokio::test]
async fn sqlite_expired_leases_are_reclaimed() {
    let (_dir, store) = sqlite();
    expired_leases_are_reclaimed_and_the_old_owner_cannot_settle(store).await;
}

#[tokio::test]
async fn sqlite_one_object_in_version_order() {
    let (_dir, store) = sqlite();
    one_object_goes_out_one_version_at_a_time_in_order(store).await;
}

#[tokio::test]
async fn sqlite_stale_versions_are_skipped() {
    let (_dir, store) = sqlite();
    versions_not_newer_than_delivered_are_skipped_stale(store).await;
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
async fn sqlite_bodies_are_written_once_and_read_back_exactly() {
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
async fn sqlite_a_body_that_no_longer_matches_its_fingerprint_is_reported_corrupt() {
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
async fn sqlite_rows_from_before_the_payload_log_keep_their_bodies() {
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
async fn sqlite_a_handler_commits_with_delivered_or_not_at_all() {
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
async fn sqlite_a_handler_does_not_run_under_a_lease_that_was_reclaimed() {
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
