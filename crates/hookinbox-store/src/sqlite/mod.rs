//! The embedded SQLite store: WAL with `synchronous=FULL`, one writer thread
//! doing group commit, readers on their own connections, and raw bodies in
//! an append-only payload log beside the database file (`payload_log`).
//! All of its files are private to the user it runs as (`private_files`).
//! With encryption keys (`SqliteOptions::keys`), bodies and audit headers
//! are sealed at rest (`accept`, `reader`, `rewrap`).

mod accept;
mod backlog;
mod checkpointer;
mod compaction;
mod disk_reserve;
mod drift;
mod fetched;
mod group_commit;
mod key_facts;
mod learned_secrets;
mod maintenance;
mod outbox;
mod overview;
mod payload_log;
mod private_files;
mod purge;
mod purge_room;
#[cfg(test)]
mod query_plans;
mod reader;
mod rewrap;
#[cfg(test)]
mod scan_plans_tests;
mod schema;
mod segment_numbers;
mod stall_point;
mod stream;
mod target_gates;
mod wal_restart;
#[cfg(test)]
mod wal_test_support;
mod wal_truncate;
mod write_backoff;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::Connection;

pub use reader::SqliteReader;
pub use schema::CURRENT_VERSION as SCHEMA_VERSION;

pub use crate::handler::HandlerDelivery;
use crate::key_check;
use crate::prepared_event::PreparedEvent;
use crate::{
    AcceptOutcome, Backlog, BacklogCounts, Drift, DriftQuery, DriftRepair, EncryptionKeys,
    HandledEvent, InboxStatus, KeyCheck, KeyCheckMode, LeaseParams, LeasedDelivery, LeasedEvent,
    NewEvent, PurgeCounts, PurgeProgress, Reconciliation, Repaired, ReplaySelector,
    RetentionPolicy, RewrapProgress, SettleRequest, Settlement, SqliteHandler, Stats, Store,
    StoreError, StoreReads, StoredEvent, TargetRef,
};
use group_commit::{BatchLimits, OpError, TxOp, WriteOp};
use payload_log::PayloadLog;
use stall_point::StallPoint;

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
    /// Least time between the starts of two commits: a batch that starts
    /// with a body and would start sooner waits for more events until
    /// then, so each pair of syncs serves several events
    /// (`group_commit::gather`); leases and settlements never wait. Zero:
    /// commit whatever is waiting at once.
    pub commit_interval: Duration,
    /// How often the background checkpointer runs.
    pub checkpoint_interval: Duration,
    /// New bodies are refused (503) while writing them would leave fewer
    /// bytes free on the payload log's filesystem: room kept for SQLite to
    /// checkpoint and purge (see `disk_reserve`). 0: none kept.
    pub disk_reserve_bytes: u64,
    /// Seal raw bodies and audit headers at rest under the active key, and
    /// open sealed ones with the key their row names. `None`: new records
    /// are stored plain, as before encryption existed.
    pub keys: Option<Arc<EncryptionKeys>>,
}

impl SqliteOptions {
    /// The default `busy_timeout`; the service's `storage.busy_timeout` too.
    pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(2);
    /// The default `queue_capacity`; the service's `storage.queue_capacity` too.
    pub const DEFAULT_QUEUE_CAPACITY: usize = 4096;
    /// The default `max_batch_events`; the service's `storage.max_batch_events` too.
    pub const DEFAULT_MAX_BATCH_EVENTS: usize = 512;
    /// The default `disk_reserve_bytes`; the service's `storage.disk_reserve_bytes` too.
    pub const DEFAULT_DISK_RESERVE_BYTES: u64 = disk_reserve::RESERVE_BYTES;
    /// The default `commit_interval`; the service's `storage.commit_interval`
    /// too (chosen by measurement: bench/RESULTS.md §14).
    pub const DEFAULT_COMMIT_INTERVAL: Duration = Duration::from_millis(2);

    pub fn new(path: impl Into<PathBuf>) -> Self {
        SqliteOptions {
            path: path.into(),
            busy_timeout: Self::DEFAULT_BUSY_TIMEOUT,
            queue_capacity: Self::DEFAULT_QUEUE_CAPACITY,
            max_batch_events: Self::DEFAULT_MAX_BATCH_EVENTS,
            max_batch_bytes: 16 << 20,
            commit_interval: Self::DEFAULT_COMMIT_INTERVAL,
            checkpoint_interval: Duration::from_millis(250),
            disk_reserve_bytes: Self::DEFAULT_DISK_RESERVE_BYTES,
            keys: None,
        }
    }
}

/// The SQLite implementation of [`Store`].
pub struct SqliteStore {
    queue: Option<SyncSender<Box<dyn WriteOp>>>,
    /// Ops in `queue` not yet taken by the writer (the commit queue depth).
    queued: Arc<AtomicUsize>,
    writer: Option<JoinHandle<()>>,
    stop_checkpointer: Option<mpsc::Sender<()>>,
    checkpointer: Option<JoinHandle<()>>,
    reader: Arc<SqliteReader>,
    keys: Option<Arc<EncryptionKeys>>,
    /// A purge purged something but could not truncate the WAL (the store
    /// was busy): the next purge truncates it, even if it purges nothing,
    /// or the purged content would stay in the WAL's old frames.
    wal_truncation_owed: AtomicBool,
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
    // Deleted content (purged audit headers, deleted rows) is overwritten
    // with zeros rather than left in free space (docs/architecture.md §6:
    // purge means gone). Its cost is in bench/RESULTS.md.
    conn.pragma_update(None, "secure_delete", "ON")?;
    Ok(conn)
}

/// Creates the database file as 0600 when it is new, and fixes the modes
/// of the database, its `-wal` and `-shm`, and the payload log where they
/// are looser than private (with a warning each; see `private_files`).
fn make_files_private(db_path: &Path) -> std::io::Result<()> {
    private_files::create_database_file(db_path)?;
    private_files::make_private(db_path, private_files::PRIVATE_FILE_MODE)?;
    for sidecar in private_files::sidecar_files(db_path) {
        private_files::make_private(&sidecar, private_files::PRIVATE_FILE_MODE)?;
    }
    payload_log::make_private(&payload_log::directory_for(db_path))
}

impl SqliteStore {
    /// Opens (creating if missing) and migrates the database, then starts the
    /// writer and checkpointer threads.
    pub fn open(options: SqliteOptions) -> Result<SqliteStore, StoreError> {
        let open_error = |e: &dyn std::fmt::Display| {
            StoreError::open(format!("{}: {e}", options.path.display()))
        };
        if let Some(parent) = options.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| open_error(&e))?;
        }
        make_files_private(&options.path).map_err(|e| open_error(&e))?;
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
        // When the WAL starts over, this connection cuts it back to this
        // size, not to zero: the kept bytes are room to write in on a full
        // disk (`checkpointer`, `purge_room`).
        conn.pragma_update(None, "journal_size_limit", checkpointer::WAL_KEPT_BYTES)
            .map_err(|e| open_error(&e))?;
        // Every op of a group commit runs in its own savepoint, so SQLite
        // copies each page an op changes into a statement journal first.
        // Past 64 KiB that journal spills to a temporary file: a write
        // syscall per page on the writer thread (5 % of the serve process's
        // CPU in a perf profile). In memory it is a copy; it holds one op's
        // pages at a time, since releasing the savepoint truncates it.
        conn.pragma_update(None, "temp_store", "MEMORY")
            .map_err(|e| open_error(&e))?;
        schema::migrate(&mut conn).map_err(|e| open_error(&e))?;
        // The -wal and -shm exist now; SQLite gave new ones the database's
        // mode, and old ones were fixed above. Checked again all the same.
        for sidecar in private_files::sidecar_files(&options.path) {
            private_files::make_private(&sidecar, private_files::PRIVATE_FILE_MODE)
                .map_err(|e| open_error(&e))?;
        }

        let payload_dir = payload_log::directory_for(&options.path);
        let numbers = segment_numbers::SegmentNumbers::open(&options.path, options.busy_timeout)
            .map_err(|e| open_error(&e))?;
        let payloads =
            payload_log::PayloadLog::open(&payload_dir, numbers).map_err(|e| open_error(&e))?;
        let reserve = disk_reserve::DiskReserve::new(&payload_dir, options.disk_reserve_bytes);
        let reader = Arc::new(SqliteReader::open_with_keys(
            &options.path,
            options.keys.clone(),
        )?);
        let (queue, requests) = mpsc::sync_channel(options.queue_capacity);
        let queued = Arc::new(AtomicUsize::new(0));
        let limits = BatchLimits {
            max_ops: options.max_batch_events.max(1),
            max_bytes: options.max_batch_bytes,
            commit_interval: options.commit_interval,
        };
        let taken = Arc::clone(&queued);
        let wal_restart = wal_restart::WalRestart::new(options.busy_timeout);
        let asks_for_restarts = wal_restart.clone();
        // Thread names stay within Linux's 15 characters, so `top -H`, `perf`
        // and /proc tell the writer and the checkpointer apart.
        let writer = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                group_commit::run(
                    conn,
                    payloads,
                    requests,
                    limits,
                    &taken,
                    reserve,
                    &wal_restart,
                )
            })
            .map_err(|e| open_error(&e))?;
        let (stop_checkpointer, stop) = mpsc::channel();
        let path = options.path.clone();
        let interval = options.checkpoint_interval;
        let files = reader.payload_files();
        let checkpointer = std::thread::Builder::new()
            .name("sqlite-checkpt".into())
            .spawn(move || checkpointer::run(path, interval, &files, &asks_for_restarts, stop))
            .map_err(|e| open_error(&e))?;
        Ok(SqliteStore {
            queue: Some(queue),
            queued,
            writer: Some(writer),
            stop_checkpointer: Some(stop_checkpointer),
            checkpointer: Some(checkpointer),
            reader,
            keys: options.keys,
            wal_truncation_owed: AtomicBool::new(false),
        })
    }

    pub fn reader(&self) -> &Arc<SqliteReader> {
        &self.reader
    }

    /// A reader on a connection of its own, with this store's keys: for
    /// operator pages, whose reads must not queue behind (or hold up) the
    /// ones the delivery workers make on [`SqliteStore::reader`].
    /// It shares this store's open payload segment files, so what the
    /// checkpointer closes of them (deleted segments) is closed for it too.
    pub fn open_reader(&self) -> Result<SqliteReader, StoreError> {
        SqliteReader::open_sharing_files(
            self.reader.path(),
            self.keys.clone(),
            self.reader.payload_files(),
        )
    }
}

impl SqliteStore {
    /// Queues one write op and waits for its batch to commit.
    async fn write<T: Send + 'static>(
        &self,
        weight: usize,
        work: impl FnMut(&Connection, &mut PayloadLog) -> Result<T, OpError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let queue = self.queue.as_ref().ok_or(StoreError::Stopped)?;
        let (op, answer) = TxOp::boxed(weight, work);
        // Counted before the send: the writer may take the op at once.
        self.queued.fetch_add(1, Ordering::Relaxed);
        let sent = queue.try_send(op);
        if sent.is_err() {
            self.queued.fetch_sub(1, Ordering::Relaxed);
        }
        match sent {
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
            .map_err(StoreError::unavailable)?
    }
}

impl SqliteStore {
    /// Accepts an event and, if it is new, applies `handler` to it in the
    /// same transaction, marking it PROCESSED: both commit or neither does.
    /// Duplicates and conflicts do not run the handler.
    ///
    /// For a deadline, wrap the call in `tokio::time::timeout`: dropping
    /// the future is safe. An op still queued then is skipped; one already
    /// in a batch commits or not with it, so the outcome is unknown and the
    /// caller answers as for any storage error (the retry is deduplicated).
    /// A handler that is already running is not interrupted.
    pub async fn accept_and_handle(
        &self,
        event: NewEvent,
        handler: Arc<dyn SqliteHandler>,
    ) -> Result<AcceptOutcome, StoreError> {
        let prepared = PreparedEvent::prepare(event, self.keys.as_ref()).await?;
        self.write(prepared.stored_len(), move |conn, payloads| {
            let outcome = accept::accept(conn, payloads, &prepared)?;
            if let AcceptOutcome::Inserted { id } = &outcome {
                let event = &prepared.event;
                let handled = HandledEvent {
                    inbox_id: id,
                    endpoint_id: &event.endpoint_id,
                    provider_event_id: &event.provider_event_id,
                    event_type: event.event_type.as_deref(),
                    payload: &event.payload,
                };
                handler.handle(conn, &handled).map_err(OpError::Handler)?;
                conn.prepare_cached(
                    "UPDATE inbox SET status = 'PROCESSED' WHERE id = ?1 AND status = 'ACCEPTED'",
                )?
                .execute([id])?;
            }
            Ok(outcome)
        })
        .await
    }
}

impl SqliteStore {
    /// Delivers a leased delivery to a library handler: in one transaction,
    /// the delivery is settled DELIVERED (guarded on the lease, as every
    /// settlement is), the handler applies its change, and the inbox row
    /// becomes PROCESSED once all its deliveries are done. Either all of it
    /// commits or none does, so a logical event changes business state
    /// exactly once however often the delivery is attempted. A handler error
    /// rolls everything back and is returned; the caller settles it as a
    /// failed attempt (retry or dead).
    pub async fn deliver_to_handler(
        &self,
        lease: LeasedDelivery,
        event: StoredEvent,
        handler: Arc<dyn SqliteHandler>,
        now_ms: i64,
    ) -> Result<HandlerDelivery, StoreError> {
        self.write(0, move |conn, _| {
            if !outbox::settle(conn, &lease, &Settlement::Delivered, now_ms)? {
                return Ok(HandlerDelivery::LeaseLost);
            }
            let payload = event.payload.as_deref().unwrap_or_default();
            let handled = HandledEvent {
                inbox_id: &event.id,
                endpoint_id: &event.endpoint_id,
                provider_event_id: &event.provider_event_id,
                event_type: event.event_type.as_deref(),
                payload,
            };
            handler.handle(conn, &handled).map_err(OpError::Handler)?;
            Ok(HandlerDelivery::Applied)
        })
        .await
    }
}

impl SqliteStore {
    /// Re-seals up to `limit` rows that are not under the active key
    /// (plain rows included) under it, in one write of the group commit,
    /// and says how many are left: loop until [`RewrapProgress::is_done`].
    /// Each re-sealed body is appended to the payload log and its row
    /// points at the new copy; once none is left to do, the segments left
    /// unreferenced or sparse are compacted and deleted, retention or not
    /// (see `rewrap`). Without keys: `NoEncryptionKeys`.
    pub async fn rewrap_batch(&self, limit: usize) -> Result<RewrapProgress, StoreError> {
        let keys = self.keys.clone().ok_or(StoreError::NoEncryptionKeys)?;
        let active = keys.active_id().to_owned();
        let remaining = self
            .read(move |reader| reader.count_not_under_key(&active))
            .await?;
        if limit == 0 {
            return Ok(RewrapProgress {
                rewrapped: 0,
                remaining,
            });
        }
        if remaining == 0 {
            // No rewrap write: nothing to do must not start a segment. What
            // an earlier, killed run left behind is reclaimed all the same.
            self.reclaim_segments().await?;
            return Ok(RewrapProgress {
                rewrapped: 0,
                remaining,
            });
        }
        let reader = Arc::clone(&self.reader);
        // A weight above 0: the op may write bodies (a segment is made
        // ready for it, and it waits while the payload log rests).
        let progress = self
            .write(1, move |conn, payloads| {
                rewrap::rewrap(conn, payloads, &reader, &keys, limit)
            })
            .await?;
        if progress.is_done() {
            // The old-key bytes go now, retention or not (see `rewrap`).
            self.reclaim_segments().await?;
        }
        Ok(progress)
    }

    /// Copies the live bodies of sparse segments forward (`compaction`),
    /// then deletes every segment no committed row references; how many
    /// were deleted. A compaction that fails (the payload log resting after
    /// a failed write, a full disk) is logged and skipped: the deletion,
    /// which frees space, still runs.
    async fn reclaim_segments(&self) -> Result<u64, StoreError> {
        if let Err(error) = self.compact_sparse_segments().await {
            tracing::warn!(message = "Payload segment compaction skipped.", %error);
        }
        self.delete_unreferenced_segments().await
    }

    /// One op of the group commit per batch of live bodies (at most
    /// `compaction::OP_BYTES`), read beforehand on a reader connection of
    /// its own, so neither the writer nor the delivery reads wait for the
    /// survey.
    async fn compact_sparse_segments(&self) -> Result<(), StoreError> {
        let survey = Arc::new(self.open_reader()?);
        let sparse = {
            let survey = Arc::clone(&survey);
            tokio::task::spawn_blocking(move || compaction::sparse_segments(&survey))
                .await
                .map_err(StoreError::unavailable)??
        };
        for segment in sparse {
            loop {
                let survey = Arc::clone(&survey);
                let bodies =
                    tokio::task::spawn_blocking(move || compaction::live_bodies(&survey, segment))
                        .await
                        .map_err(StoreError::unavailable)??;
                if bodies.is_empty() {
                    break;
                }
                let moved = self
                    .write(compaction::weight(&bodies), move |conn, payloads| {
                        compaction::move_forward(conn, payloads, &bodies, std::time::Instant::now())
                    })
                    .await?;
                if moved == 0 {
                    // Its rows changed meanwhile, or the writer could not
                    // leave it yet: the next purge tries again.
                    break;
                }
            }
        }
        Ok(())
    }

    /// Deletes the payload segments no committed row references, the
    /// writer's current one included (see `purge`).
    async fn delete_unreferenced_segments(&self) -> Result<u64, StoreError> {
        let reader = Arc::clone(&self.reader);
        self.write(0, move |_, payloads| {
            purge::delete_unreferenced_segments(payloads, &reader)
        })
        .await
    }

    /// Checkpoints and truncates the WAL after a purge (`wal_truncate`),
    /// best effort: whether it was done; a busy store is left alone until
    /// the next purge, which tries again (`wal_truncation_owed`).
    async fn truncate_wal(&self) -> bool {
        let path = self.reader.path().to_owned();
        let done = tokio::task::spawn_blocking(move || wal_truncate::truncate(&path)).await;
        match done {
            Ok(Ok(true)) => true,
            Ok(Ok(false)) => {
                tracing::debug!(message = "WAL truncation after a purge found the store busy.");
                false
            }
            Ok(Err(error)) => {
                tracing::warn!(message = "WAL truncation after a purge failed.", %error);
                false
            }
            Err(error) => {
                tracing::warn!(message = "WAL truncation after a purge failed.", %error);
                false
            }
        }
    }
}

impl SqliteStore {
    /// Checks this store's key ring against the database (see
    /// `key_check`); in [`KeyCheckMode::Record`], when everything matches,
    /// records the check values of key ids that have none, through the
    /// writer, and checks again. Mismatches are in the answer, not an
    /// error: [`KeyCheck::matched`] turns them into one.
    pub async fn check_keys(&self, mode: KeyCheckMode) -> Result<KeyCheck, StoreError> {
        let before = self.reader.check_keys()?;
        if !key_check::should_record(mode, &before) {
            return Ok(before);
        }
        let keys = self.keys.clone().ok_or(StoreError::NoEncryptionKeys)?;
        let values = key_check::check_values(&keys, &before.unrecorded)?;
        self.write(0, move |conn, _| Ok(key_facts::record(conn, &values)?))
            .await?;
        let facts = self.reader.with_conn(key_facts::read)?;
        Ok(key_check::after_recording(
            self.keys.as_deref(),
            &facts,
            before,
        ))
    }
}

impl SqliteStore {
    /// Purges under `policy` at `now_ms`, up to `limit` items per rule, in
    /// one write of the group commit (cut short after about 1 ms of
    /// finding and deleting, once 16 items are done: the accepts of the same commit
    /// wait for it), then deletes the payload segments no row references
    /// any more (see `purge`). The batch that ends a purge which purged
    /// something also compacts sparse segments and truncates the WAL
    /// (docs/architecture.md §6: purge means gone). Loop until
    /// [`PurgeProgress::is_done`].
    pub async fn purge_batch(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
        limit: usize,
    ) -> Result<PurgeProgress, StoreError> {
        let rules = *policy;
        if purge_room::is_low(&payload_log::directory_for(self.reader.path())) {
            self.free_before_purging().await?;
        }
        let purged = self
            .write(0, move |conn, _| {
                Ok(purge::purge(conn, &rules, now_ms, limit, purge::OP_BUDGET)?)
            })
            .await?;
        StallPoint::Purge.wait_while_armed_async().await;
        // Retention off or not: segments a rewrap or a killed process left
        // unreferenced are reclaimed too (docs/architecture.md §6).
        let mut segments_deleted = self.delete_unreferenced_segments().await?;
        let policy = *policy;
        let remaining = self
            .read(move |reader| reader.purge_due_up_to(&policy, now_ms, limit.max(1)))
            .await?;
        if remaining.is_empty() && !purged.is_empty() {
            // The last batch of a purge that purged something: sparse
            // segments are compacted, and the WAL loses the purged content.
            segments_deleted += self.reclaim_segments().await?;
            self.wal_truncation_owed.store(true, Ordering::Relaxed);
        }
        if remaining.is_empty() && self.wal_truncation_owed.load(Ordering::Relaxed) {
            let done = self.truncate_wal().await;
            self.wal_truncation_owed.store(!done, Ordering::Relaxed);
        }
        Ok(PurgeProgress {
            purged,
            remaining,
            segments_deleted,
        })
    }

    /// On a nearly full disk, what a purge batch frees before it writes
    /// (see `purge_room`): segments no row references, then the WAL is
    /// restarted so the batch writes over its kept bytes.
    async fn free_before_purging(&self) -> Result<(), StoreError> {
        let reader = Arc::clone(&self.reader);
        self.write(0, move |_, payloads| {
            purge::delete_unreferenced_segments(payloads, &reader)
        })
        .await?;
        let path = self.reader.path().to_owned();
        tokio::task::spawn_blocking(move || purge_room::restart_wal(&path))
            .await
            .map_err(StoreError::unavailable)
    }

    /// What [`SqliteStore::purge_batch`] would purge now, rule by rule.
    pub async fn purge_preview(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
    ) -> Result<PurgeCounts, StoreError> {
        let policy = *policy;
        self.read(move |reader| reader.purge_preview(&policy, now_ms))
            .await
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn accept(&self, event: NewEvent) -> Result<AcceptOutcome, StoreError> {
        let prepared = PreparedEvent::prepare(event, self.keys.as_ref()).await?;
        self.write(prepared.stored_len(), move |conn, payloads| {
            Ok(accept::accept(conn, payloads, &prepared)?)
        })
        .await
    }

    async fn lease(&self, params: LeaseParams) -> Result<Vec<LeasedDelivery>, StoreError> {
        self.write(0, move |conn, _| Ok(outbox::lease(conn, &params)?))
            .await
    }

    /// The lease, then its events read in one go on the reader (one
    /// blocking task for the batch, not one per delivery).
    async fn lease_events(&self, params: LeaseParams) -> Result<Vec<LeasedEvent>, StoreError> {
        let leased = self.lease(params).await?;
        if leased.is_empty() {
            return Ok(Vec::new());
        }
        self.read(move |reader| {
            Ok(leased
                .into_iter()
                .map(|lease| {
                    let event = reader.load_event(&lease.inbox_id);
                    LeasedEvent { lease, event }
                })
                .collect())
        })
        .await
    }

    async fn heartbeat(&self, lease: &LeasedDelivery, until_ms: i64) -> Result<bool, StoreError> {
        let lease = lease.clone();
        self.write(0, move |conn, _| {
            Ok(outbox::heartbeat(conn, &lease, until_ms)?)
        })
        .await
    }

    async fn settle(
        &self,
        lease: &LeasedDelivery,
        settlement: Settlement,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let lease = lease.clone();
        self.write(0, move |conn, _| {
            Ok(outbox::settle(conn, &lease, &settlement, now_ms)?)
        })
        .await
    }

    /// One op of the group commit: one savepoint, so each page the
    /// settlements touch is statement-journalled once, not once per delivery.
    async fn settle_many(&self, requests: Vec<SettleRequest>) -> Result<Vec<bool>, StoreError> {
        self.write(0, move |conn, _| {
            let mut settled = Vec::with_capacity(requests.len());
            for request in &requests {
                settled.push(outbox::settle(
                    conn,
                    &request.lease,
                    &request.settlement,
                    request.now_ms,
                )?);
            }
            Ok(settled)
        })
        .await
    }

    async fn reclaim_expired(&self, now_ms: i64) -> Result<u64, StoreError> {
        self.write(0, move |conn, _| Ok(outbox::reclaim_expired(conn, now_ms)?))
            .await
    }

    async fn replay(
        &self,
        selector: ReplaySelector,
        now_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        self.write(0, move |conn, _| {
            Ok(outbox::replay(conn, &selector, now_ms)?)
        })
        .await
    }

    async fn load_event(&self, inbox_id: &str) -> Result<Option<StoredEvent>, StoreError> {
        let inbox_id = inbox_id.to_owned();
        self.read(move |reader| reader.load_event(&inbox_id)).await
    }

    async fn stats(&self) -> Result<Stats, StoreError> {
        self.read(|reader| reader.stats()).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        StoreReads::ping(self.reader.as_ref()).await
    }

    /// One op of the group commit that rewrites the probe row: it commits
    /// (fsync) with the next batch, or fails as the batch does. While the
    /// payload log rests after a failed write, events cannot be stored, so
    /// the probe fails too.
    async fn probe_write(&self, now_ms: i64) -> Result<(), StoreError> {
        self.write(0, move |conn, payloads| {
            if !payloads.accepts_bodies(std::time::Instant::now()) {
                return Err(OpError::Unavailable(
                    "payload log: resting after a failed write".into(),
                ));
            }
            conn.prepare_cached(
                "INSERT INTO readiness_probe (id, probed_at_ms) VALUES (1, ?1)
                 ON CONFLICT (id) DO UPDATE SET probed_at_ms = excluded.probed_at_ms",
            )?
            .execute([now_ms])?;
            Ok(())
        })
        .await
    }

    fn commit_queue_depth(&self) -> Option<usize> {
        Some(self.queued.load(Ordering::Relaxed))
    }

    fn backlog_counts(self: Arc<Self>) -> Option<Arc<dyn BacklogCounts>> {
        Some(self)
    }

    fn reconciliation(self: Arc<Self>) -> Option<Arc<dyn Reconciliation>> {
        Some(self)
    }

    fn target_gates(self: Arc<Self>) -> Option<Arc<dyn crate::TargetGates>> {
        Some(self)
    }

    fn learned_secrets(self: Arc<Self>) -> Option<Arc<dyn crate::LearnedSecrets>> {
        Some(self)
    }
}

#[async_trait]
impl BacklogCounts for SqliteStore {
    async fn backlog(
        &self,
        endpoints: &[String],
        targets: &[TargetRef],
    ) -> Result<Backlog, StoreError> {
        let (endpoints, targets) = (endpoints.to_vec(), targets.to_vec());
        self.read(move |reader| reader.backlog(&endpoints, &targets))
            .await
    }

    async fn count_by_status(&self, status: InboxStatus) -> Result<u64, StoreError> {
        self.read(move |reader| reader.count_by_status(status))
            .await
    }
}

#[async_trait]
impl Reconciliation for SqliteStore {
    async fn find_drift(&self, query: DriftQuery) -> Result<Drift, StoreError> {
        self.read(move |reader| reader.find_drift(&query)).await
    }

    async fn repair_drift(&self, repair: DriftRepair) -> Result<Repaired, StoreError> {
        self.write(0, move |conn, _| Ok(drift::repair(conn, &repair)?))
            .await
    }

    async fn known_event_ids(
        &self,
        endpoint_id: &str,
        provider_event_ids: &[String],
    ) -> Result<HashSet<String>, StoreError> {
        let (endpoint_id, ids) = (endpoint_id.to_owned(), provider_event_ids.to_vec());
        self.read(move |reader| reader.known_event_ids(&endpoint_id, &ids))
            .await
    }

    async fn accept_fetched(
        &self,
        event: NewEvent,
        fetched_at_ms: i64,
    ) -> Result<AcceptOutcome, StoreError> {
        let prepared = PreparedEvent::prepare(event, self.keys.as_ref()).await?;
        self.write(prepared.stored_len(), move |conn, payloads| {
            Ok(fetched::accept_fetched(
                conn,
                payloads,
                &prepared,
                fetched_at_ms,
            )?)
        })
        .await
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
