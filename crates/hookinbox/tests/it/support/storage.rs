//! Black-box tests written once and run on both backends: a [`Storage`] is
//! where one test's service keeps its events — an SQLite file in the test's
//! directory, or a PostgreSQL schema of its own — and what the test reads
//! back goes through the store's operator reads ([`StoreReads`], what
//! `hookinbox events` and the admin API read), never through SQL of the
//! test's, so the same assertions hold on both.
//!
//! `on_both_backends!` makes one test per scenario per backend, in a module
//! per backend (`sqlite::…`, `postgres::…`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hookinbox_store::{
    EventDetail, EventFilter, EventSummary, PostgresOptions, PostgresReader, PostgresUrl,
    SqliteReader, StoreReads,
};
use hookinbox_testing::TestConfig;

use super::postgres::{postgres_url, PgSchema};

/// Which database a scenario runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// One test's database and directory (for the config file, logs, and the
/// SQLite file). The PostgreSQL schema is dropped when it is dropped.
pub struct Storage {
    pub dir: tempfile::TempDir,
    place: Place,
}

enum Place {
    Sqlite(PathBuf),
    Postgres(PgSchema),
}

impl Storage {
    pub fn new(backend: Backend) -> Storage {
        let dir = tempfile::tempdir().expect("temporary directory");
        let place = match backend {
            Backend::Sqlite => Place::Sqlite(dir.path().join("inbox.db")),
            Backend::Postgres => Place::Postgres(PgSchema::new()),
        };
        Storage { dir, place }
    }

    pub fn backend(&self) -> Backend {
        match self.place {
            Place::Sqlite(_) => Backend::Sqlite,
            Place::Postgres(_) => Backend::Postgres,
        }
    }

    /// The test configuration storing here (one `lab` endpoint).
    pub fn config(&self) -> TestConfig {
        match &self.place {
            Place::Sqlite(db) => TestConfig::new(db),
            Place::Postgres(schema) => schema.config(TestConfig::new(Path::new("unused.db"))),
        }
    }

    /// The SQLite file, for what only SQLite has (the payload log, the
    /// file's integrity); `None` on PostgreSQL.
    pub fn sqlite_file(&self) -> Option<&Path> {
        match &self.place {
            Place::Sqlite(db) => Some(db),
            Place::Postgres(_) => None,
        }
    }

    /// The PostgreSQL schema; `None` on SQLite.
    pub fn postgres_schema(&self) -> Option<&PgSchema> {
        match &self.place {
            Place::Sqlite(_) => None,
            Place::Postgres(schema) => Some(schema),
        }
    }

    /// The operator reads of this database, as `hookinbox events` opens
    /// them (no keys: the tests that read sealed bodies use the CLI).
    pub async fn reads(&self) -> Box<dyn StoreReads> {
        match &self.place {
            Place::Sqlite(db) => Box::new(SqliteReader::open(db).expect("open the SQLite store")),
            Place::Postgres(schema) => {
                let url = PostgresUrl::parse(&postgres_url()).expect("the test server's URL");
                let mut options = PostgresOptions::new(url);
                options.schema = Some(schema.name.clone());
                options.pool_size = 2;
                Box::new(
                    PostgresReader::connect(&options)
                        .await
                        .expect("connect to the PostgreSQL store"),
                )
            }
        }
    }

    /// Every stored event, oldest first (all pages).
    pub async fn events(&self) -> Vec<EventSummary> {
        let reads = self.reads().await;
        let mut filter = EventFilter {
            limit: 1000,
            ..EventFilter::default()
        };
        let mut events = Vec::new();
        loop {
            let page = reads.list_events(&filter).await.expect("list events");
            let next = page.next_page();
            events.extend(page.events);
            match next {
                Some(cursor) => filter.cursor = Some(cursor),
                None => break,
            }
        }
        events.reverse();
        events
    }

    /// The status of every event, by provider event id.
    pub async fn statuses(&self) -> std::collections::HashMap<String, String> {
        self.events()
            .await
            .into_iter()
            .map(|event| (event.provider_event_id, event.status))
            .collect()
    }

    /// One event with its deliveries and attempts, and its body (checked
    /// against its fingerprint); panics when there is no such event.
    pub async fn event(&self, inbox_id: &str) -> (EventDetail, Bytes) {
        let (detail, payload) = self
            .reads()
            .await
            .show_event(inbox_id, true)
            .await
            .expect("show the event")
            .unwrap_or_else(|| panic!("no event {inbox_id}"));
        (detail, payload.unwrap_or_default())
    }

    /// Every delivery with its attempt log, in the order they were created.
    pub async fn deliveries(&self) -> Vec<Delivery> {
        let reads = self.reads().await;
        let mut deliveries = Vec::new();
        for event in self.events().await {
            let (detail, _) = reads
                .show_event(&event.id, false)
                .await
                .expect("show the event")
                .expect("a listed event exists");
            for delivery in detail.deliveries {
                deliveries.push(Delivery {
                    id: delivery.id,
                    event_id: event.provider_event_id.clone(),
                    status: delivery.status,
                    attempts: delivery.attempts,
                    next_attempt_at_ms: delivery.next_attempt_at_ms,
                    attempt_log: delivery
                        .attempt_log
                        .into_iter()
                        .map(|attempt| Attempt {
                            attempt: attempt.attempt,
                            finished_at_ms: attempt.finished_at_ms,
                            outcome: attempt.outcome,
                            error: attempt.error,
                        })
                        .collect(),
                });
            }
        }
        deliveries.sort_by_key(|delivery| delivery.id);
        deliveries
    }

    /// Creates the table of the test ledger (`hookinbox_testing::ledger`),
    /// before the service starts.
    pub async fn create_ledger(&self) {
        match &self.place {
            Place::Sqlite(db) => {
                let conn = rusqlite::Connection::open(db).expect("open the SQLite file");
                hookinbox_testing::ledger::create(&conn).expect("create the ledger");
            }
            Place::Postgres(schema) => {
                schema
                    .execute(&format!(
                        "CREATE SCHEMA {}; {}",
                        schema.name,
                        hookinbox_testing::ledger::SCHEMA
                    ))
                    .await
            }
        }
    }

    /// Every ledger entry as (inbox id, amount), by inbox id.
    pub async fn ledger_entries(&self) -> Vec<(String, i64)> {
        match &self.place {
            Place::Sqlite(db) => {
                let conn = rusqlite::Connection::open(db).expect("open the SQLite file");
                hookinbox_testing::ledger::amounts(&conn).expect("read the ledger")
            }
            Place::Postgres(schema) => schema
                .query("SELECT inbox_id, amount FROM ledger_entry ORDER BY inbox_id")
                .await
                .iter()
                .map(|row| (row.get(0), row.get(1)))
                .collect(),
        }
    }

    /// Waits until every stored event (at least `count`) is PROCESSED or
    /// FAILED; `false` when `within` passes first.
    pub async fn all_terminal(&self, count: usize, within: Duration) -> bool {
        until(within, || async {
            let statuses = self.statuses().await;
            statuses.len() >= count
                && statuses
                    .values()
                    .all(|status| status == "PROCESSED" || status == "FAILED")
        })
        .await
    }
}

/// A delivery row as the operator reads show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: i64,
    /// The provider event id of its event.
    pub event_id: String,
    pub status: String,
    pub attempts: i64,
    /// When a pending delivery is due, unix milliseconds.
    pub next_attempt_at_ms: i64,
    /// In order.
    pub attempt_log: Vec<Attempt>,
}

/// One recorded attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// 1 for the first attempt of the delivery.
    pub attempt: i64,
    /// When its outcome was settled, unix milliseconds on the service's clock.
    pub finished_at_ms: i64,
    /// `DELIVERED`, `PENDING` (to be retried) or `DEAD`.
    pub outcome: String,
    pub error: Option<String>,
}

/// Polls the async `check` every 50 ms until it holds (`true`) or `within`
/// passes (`false`); as [`hookinbox_testing::eventually`], for checks that
/// read the store.
pub async fn until<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One `#[tokio::test]` per scenario (an `async fn(Backend)`) per backend.
#[macro_export]
macro_rules! on_both_backends {
    ($($scenario:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario($crate::support::Backend::Sqlite).await;
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario($crate::support::Backend::Postgres).await;
                }
            )+
        }
    };
}
