//! The behaviour every `Store` must have, run against each backend.

use std::sync::Arc;

use bytes::Bytes;
use hookinbox_store::{
    AcceptOutcome, Fingerprint, NewEvent, SqliteOptions, SqliteStore, Store, StoreError,
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
