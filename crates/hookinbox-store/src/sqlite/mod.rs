//! The embedded SQLite store: WAL with `synchronous=FULL`, one writer thread
//! doing group commit, readers on their own connections.

mod accept;
mod checkpointer;
mod group_commit;
mod outbox;
mod reader;
mod schema;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::Connection;

pub use reader::SqliteReader;
pub use schema::CURRENT_VERSION as SCHEMA_VERSION;

use crate::{
    AcceptOutcome, LeaseParams, LeasedDelivery, NewEvent, ReplaySelector, Settlement, Stats, Store,
    StoreError, StoredEvent,
};
use group_commit::{BatchLimits, TxOp, WriteOp};

/// Tuning of the SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    pub path: PathBuf,
    /// How long a commit waits for a lock held by another process before the
    /// batch is answered 503.
    pub busy_timeout: Duration,
    /// Requests that may wait for the writer; beyond it requests get 503.
    pub queue_capacity: usize,
    /// Most events in one transaction.
    pub max_batch_events: usize,
    /// Most payload bytes in one transaction (a batch always takes at least one event).
    pub max_batch_bytes: usize,
    /// How often the background checkpointer runs.
    pub checkpoint_interval: Duration,
}

impl SqliteOptions {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        SqliteOptions {
            path: path.into(),
            busy_timeout: Duration::from_secs(2),
            queue_capacity: 4096,
            max_batch_events: 512,
            max_batch_bytes: 16 << 20,
            checkpoint_interval: Duration::from_millis(250),
        }
    }
}

/// The SQLite implementation of [`Store`].
pub struct SqliteStore {
    queue: Option<SyncSender<Box<dyn WriteOp>>>,
    writer: Option<JoinHandle<()>>,
    stop_checkpointer: Option<mpsc::Sender<()>>,
    checkpointer: Option<JoinHandle<()>>,
    reader: Arc<SqliteReader>,
}

/// Opens a connection with the pragmas every hookinbox connection uses.
pub(crate) fn open_connection(
    path: &Path,
    busy_timeout: Duration,
) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(busy_timeout)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // FULL: the WAL is fsynced at every commit, so an acknowledged event
    // survives power loss, not only a process crash.
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (creating if missing) and migrates the database, then starts the
    /// writer and checkpointer threads.
    pub fn open(options: SqliteOptions) -> Result<SqliteStore, StoreError> {
        let open_error = |e: &dyn std::fmt::Display| {
            StoreError::Open(format!("{}: {e}", options.path.display()))
        };
        if let Some(parent) = options.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| open_error(&e))?;
        }
        let mut conn =
            open_connection(&options.path, options.busy_timeout).map_err(|e| open_error(&e))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .map_err(|e| open_error(&e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(open_error(&format!(
                "journal_mode is {mode}, WAL is required"
            )));
        }
        // Backstop only: the checkpointer thread does the regular work.
        conn.pragma_update(None, "wal_autocheckpoint", 8192)
            .map_err(|e| open_error(&e))?;
        schema::migrate(&mut conn).map_err(|e| open_error(&e))?;

        let reader = Arc::new(SqliteReader::open(&options.path)?);
        let (queue, requests) = mpsc::sync_channel(options.queue_capacity);
        let limits = BatchLimits {
            max_ops: options.max_batch_events.max(1),
            max_bytes: options.max_batch_bytes,
        };
        // Thread names stay within Linux's 15 characters, so `top -H`, `perf`
        // and /proc tell the writer and the checkpointer apart.
        let writer = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || group_commit::run(conn, requests, limits))
            .map_err(|e| open_error(&e))?;
        let (stop_checkpointer, stop) = mpsc::channel();
        let path = options.path.clone();
        let interval = options.checkpoint_interval;
        let checkpointer = std::thread::Builder::new()
            .name("sqlite-checkpt".into())
            .spawn(move || checkpointer::run(path, interval, stop))
            .map_err(|e| open_error(&e))?;
        Ok(SqliteStore {
            queue: Some(queue),
            writer: Some(writer),
            stop_checkpointer: Some(stop_checkpointer),
            checkpointer: Some(checkpointer),
            reader,
        })
    }

    pub fn reader(&self) -> &Arc<SqliteReader> {
        &self.reader
    }
}

impl SqliteStore {
    /// Queues one write op and waits for its batch to commit.
    async fn write<T: Send + 'static>(
        &self,
        weight: usize,
        work: impl FnMut(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    ) -> Result<T, StoreError> {
        let queue = self.queue.as_ref().ok_or(StoreError::Stopped)?;
        let (op, answer) = TxOp::new(weight, work);
        match queue.try_send(op) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(StoreError::Overloaded),
            Err(TrySendError::Disconnected(_)) => return Err(StoreError::Stopped),
        }
        answer.await.map_err(|_| StoreError::Stopped)?
    }

    async fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&SqliteReader) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let reader = Arc::clone(&self.reader);
        tokio::task::spawn_blocking(move || work(&reader))
            .await
            .map_err(|e| StoreError::Unavailable(e.to_string()))?
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn accept(&self, event: NewEvent) -> Result<AcceptOutcome, StoreError> {
        let weight = event.payload.len();
        self.write(weight, move |conn| accept::accept(conn, &event))
            .await
    }

    async fn lease(&self, params: LeaseParams) -> Result<Vec<LeasedDelivery>, StoreError> {
        self.write(0, move |conn| outbox::lease(conn, &params))
            .await
    }

    async fn heartbeat(&self, lease: &LeasedDelivery, until_ms: i64) -> Result<bool, StoreError> {
        let lease = lease.clone();
        self.write(0, move |conn| outbox::heartbeat(conn, &lease, until_ms))
            .await
    }

    async fn settle(
        &self,
        lease: &LeasedDelivery,
        settlement: Settlement,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let lease = lease.clone();
        self.write(0, move |conn| {
            outbox::settle(conn, &lease, &settlement, now_ms)
        })
        .await
    }

    async fn reclaim_expired(&self, now_ms: i64) -> Result<u64, StoreError> {
        self.write(0, move |conn| outbox::reclaim_expired(conn, now_ms))
            .await
    }

    async fn replay(
        &self,
        selector: ReplaySelector,
        now_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        self.write(0, move |conn| outbox::replay(conn, &selector, now_ms))
            .await
    }

    async fn load_event(&self, inbox_id: &str) -> Result<Option<StoredEvent>, StoreError> {
        let inbox_id = inbox_id.to_owned();
        self.read(move |reader| reader.load_event(&inbox_id)).await
    }

    async fn stats(&self) -> Result<Stats, StoreError> {
        self.read(|reader| reader.stats()).await
    }
}

impl Drop for SqliteStore {
    /// Closes the queue, lets the writer commit what is already queued, and
    /// waits for both threads.
    fn drop(&mut self) {
        self.queue.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        self.stop_checkpointer.take();
        if let Some(checkpointer) = self.checkpointer.take() {
            let _ = checkpointer.join();
        }
    }
}
