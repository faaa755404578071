//! What the store's tests share: the backends to run them on, and test
//! factories that fill in everything a test does not care about.
//!
//! PostgreSQL: `HOOKINBOX_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`). Each test gets a schema
//! of its own, dropped when the test ends (pass or fail), so tests run in
//! parallel. A server that cannot be reached fails the test — it never
//! skips.

#![allow(dead_code)] // not every test module uses every part of it

pub mod cut_proxy;
pub mod stored_bytes;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hookinbox_store::{
    AcceptOutcome, AnyStore, BacklogCounts, EncryptionKeys, Fingerprint, KeyCheck, KeyCheckMode,
    LeaseParams, NewEvent, PostgresOptions, PostgresUrl, PurgeCounts, PurgeProgress,
    Reconciliation, RetentionPolicy, RewrapProgress, StorageUrl, Store, StoreError, StoreOptions,
    StoreReads, UnsignedMetadata,
};

/// A store under test, with its reads, and whatever keeps its data alive
/// until the test ends.
pub struct Backend {
    pub store: Arc<dyn Store>,
    pub reads: Arc<dyn StoreReads>,
    /// The same store as `store`, for what is not on [`Store`].
    opened: AnyStore,
    place: Place,
}

/// Where a backend's data lives; kept when its store is reopened.
pub enum Place {
    /// The directory holding `inbox.db` and its payload log.
    Sqlite(tempfile::TempDir),
    Postgres(TestSchema),
}

impl Place {
    /// The SQLite database file.
    pub fn sqlite_path(&self) -> Option<std::path::PathBuf> {
        match self {
            Place::Sqlite(dir) => Some(dir.path().join("inbox.db")),
            Place::Postgres(_) => None,
        }
    }
}

pub async fn sqlite() -> Backend {
    open_in(Place::Sqlite(tempfile::tempdir().unwrap()), None).await
}

pub async fn postgres() -> Backend {
    open_in(Place::Postgres(TestSchema::new()), None).await
}

/// A store on the data in `place`, sealing with `keys` when given,
/// opened as the service opens one ([`hookinbox_store::open`]).
async fn open_in(place: Place, keys: Option<Arc<EncryptionKeys>>) -> Backend {
    let (url, mut options) = match &place {
        Place::Sqlite(dir) => (
            StorageUrl::Sqlite(dir.path().join("inbox.db")),
            StoreOptions::default(),
        ),
        Place::Postgres(schema) => schema.store_options(),
    };
    options.keys = keys;
    let opened = hookinbox_store::open(&url, options).await.unwrap();
    Backend {
        store: opened.shared(),
        reads: Arc::from(opened.reader().into_reads()),
        opened,
        place,
    }
}

impl Backend {
    /// Closes this store and opens another on the same data, with `keys`
    /// (as a restart with a new key ring would).
    pub async fn reopen(self, keys: Option<Arc<EncryptionKeys>>) -> Backend {
        let Backend {
            store,
            reads,
            opened,
            place,
        } = self;
        drop((store, reads, opened));
        open_in(place, keys).await
    }

    /// `rewrap_batch` of the store's `Maintenance`.
    pub async fn rewrap_batch(&self, limit: usize) -> Result<RewrapProgress, StoreError> {
        self.opened.maintenance().rewrap_batch(limit).await
    }

    /// `check_keys` of the store's `Maintenance`.
    pub async fn check_keys(&self, mode: KeyCheckMode) -> KeyCheck {
        self.opened.maintenance().check_keys(mode).await.unwrap()
    }

    /// `check_keys` of the store's reader (read only).
    pub async fn reader_check_keys(&self) -> KeyCheck {
        self.opened.reader().check_keys().await.unwrap()
    }

    /// `purge_batch` of the store's `Maintenance`.
    pub async fn purge_batch(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
        limit: usize,
    ) -> PurgeProgress {
        self.opened
            .maintenance()
            .purge_batch(policy, now_ms, limit)
            .await
            .unwrap()
    }

    /// `purge_preview` of the store's `Maintenance`.
    pub async fn purge_preview(&self, policy: &RetentionPolicy, now_ms: i64) -> PurgeCounts {
        self.opened
            .maintenance()
            .purge_preview(policy, now_ms)
            .await
            .unwrap()
    }

    /// The store's backlog reads: every backend has them.
    pub fn backlog_counts(&self) -> Arc<dyn BacklogCounts> {
        Arc::clone(&self.store)
            .backlog_counts()
            .expect("every backend counts its backlog")
    }

    /// The store's reconciliation: every backend has it.
    pub fn reconciliation(&self) -> Arc<dyn Reconciliation> {
        Arc::clone(&self.store)
            .reconciliation()
            .expect("every backend reconciles")
    }

    pub fn place(&self) -> &Place {
        &self.place
    }

    /// Runs statements (`;`-separated, no results) on this backend's data
    /// behind the store's back: how a test makes the drift reconciliation
    /// repairs.
    pub async fn execute(&self, sql: &str) {
        match &self.place {
            Place::Sqlite(dir) => {
                let conn = hookinbox_store::rusqlite::Connection::open(dir.path().join("inbox.db"))
                    .unwrap();
                conn.busy_timeout(Duration::from_secs(5)).unwrap();
                conn.execute_batch(sql).unwrap();
            }
            Place::Postgres(schema) => schema.execute(sql).await,
        }
    }
}

/// The server the PostgreSQL tests use.
pub fn postgres_url() -> String {
    std::env::var("HOOKINBOX_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// A schema of its own for one test; dropped with everything in it when
/// this value is dropped.
pub struct TestSchema {
    pub name: String,
}

impl TestSchema {
    /// A fresh schema name; fails the test at once, saying what to do,
    /// when the server cannot be reached.
    pub fn new() -> TestSchema {
        let url = postgres_url();
        let reachable = run_blocking(async move {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            client.simple_query("SELECT 1").await.map(drop)
        });
        if let Err(error) = reachable {
            panic!(
                "PostgreSQL is not reachable at {} ({error}). The store's tests need it: \
                 start it (`pg_ctlcluster 15 main start`, or `.ci/run` does it) or point \
                 HOOKINBOX_TEST_POSTGRES_URL at a server where this user may create schemas.",
                PostgresUrl::parse(&postgres_url())
                    .map(|url| url.to_string())
                    .unwrap_or_else(|_| "HOOKINBOX_TEST_POSTGRES_URL (unparsable)".into()),
            );
        }
        TestSchema {
            name: format!("t_{}", uuid::Uuid::now_v7().simple()),
        }
    }

    /// The URL and options of a store in this schema, with a small pool
    /// (tests run in parallel against one server).
    pub fn store_options(&self) -> (StorageUrl, StoreOptions) {
        let url = PostgresUrl::parse(&postgres_url()).unwrap();
        let options = StoreOptions {
            schema: Some(self.name.clone()),
            pool_size: 4,
            application_name: Some(self.application_name()),
            ..StoreOptions::default()
        };
        (StorageUrl::Postgres(Box::new(url)), options)
    }

    /// [`TestSchema::store_options`] as the PostgreSQL store's own options,
    /// for tests of what only it has.
    pub fn options(&self) -> PostgresOptions {
        match self.store_options() {
            (StorageUrl::Postgres(url), options) => options.postgres(&url),
            (other, _) => unreachable!("{other:?}"),
        }
    }

    /// Every session of this test's stores carries it, so cleanup (and a
    /// test that kills sessions) finds them.
    pub fn application_name(&self) -> String {
        format!("hookinbox-{}", self.name)
    }

    /// Runs `sql` in this schema, for tests that look at rows directly.
    pub async fn query(&self, sql: &str) -> Vec<tokio_postgres::Row> {
        let mut config: tokio_postgres::Config = postgres_url().parse().unwrap();
        config.options(format!("-c search_path={}", self.name));
        let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client.query(sql, &[]).await.unwrap()
    }

    /// Runs statements (`;`-separated, no results) in this schema.
    pub async fn execute(&self, sql: &str) {
        let mut config: tokio_postgres::Config = postgres_url().parse().unwrap();
        config.options(format!("-c search_path={}", self.name));
        let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(sql).await.unwrap();
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        let url = postgres_url();
        // Sessions of this test still open (a store whose tasks could not
        // run any more, on a runtime being torn down) could hold locks the
        // DROP would wait for: end them first.
        let sql = format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE application_name = '{}';
             DROP SCHEMA IF EXISTS {} CASCADE",
            self.application_name(),
            self.name
        );
        let dropped = run_blocking(async move {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            client.batch_execute(&sql).await
        });
        if let Err(error) = dropped {
            eprintln!("could not drop test schema {}: {error}", self.name);
        }
    }
}

/// Runs a future to completion on a runtime of its own, on a thread of its
/// own: usable from `Drop` and from inside a test's runtime alike.
fn run_blocking<T: Send + 'static>(
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                tokio::time::timeout(Duration::from_secs(10), work)
                    .await
                    .expect("PostgreSQL did not answer within 10 s")
            })
    })
    .join()
    .unwrap()
}

/// An event with defaults for everything a test does not care about.
pub fn event(endpoint: &str, id: &str, body: &'static [u8]) -> NewEvent {
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
        not_routed: Vec::new(),
        delays_ms: Default::default(),
        unsigned_metadata: UnsignedMetadata::default(),
        fingerprint_window_ms: None,
        trace_parent: None,
    }
}

/// The redelivery window of the unsigned-id events below, in milliseconds.
pub const WINDOW_MS: i64 = 3_600_000;

/// An event whose id came from an unsigned header (as GitHub's delivery id
/// does), received at `received_at_ms`, with one target `t`.
pub fn unsigned_id_event(id: &str, body: &'static [u8], received_at_ms: i64) -> NewEvent {
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
pub fn event_for_target(id: &str, object: Option<(&str, i64)>) -> NewEvent {
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

pub fn lease_params(owner: &str, now_ms: i64) -> LeaseParams {
    LeaseParams {
        endpoint_id: "a".into(),
        target: "t".into(),
        owner: owner.into(),
        max: 10,
        now_ms,
        lease_ms: 30_000,
        gate: Default::default(),
    }
}

pub async fn inserted(store: &Arc<dyn Store>, event: NewEvent) -> String {
    match store.accept(event).await.unwrap() {
        AcceptOutcome::Inserted { id } => id,
        other => panic!("{other:?}"),
    }
}
