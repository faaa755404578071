//! Read-side access to a SQLite inbox: its own connection, never the
//! writer's, so operator queries do not delay commits (WAL lets readers and
//! the writer proceed together).
//!
//! With encryption keys ([`SqliteReader::open_with_keys`]), sealed bodies
//! and audit headers are opened with the key their row names
//! (`payload_key_id`); rows without one are plain and read as they are,
//! keys or not (a database from before encryption).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use super::payload_log::{self, Open, PayloadFiles, PayloadRef};
use crate::event_query::{self, Dialect, Value as QueryValue};
use crate::event_view::{target_list, trace_id_of};
use crate::key_check::{self, KeyCheck};
use crate::sealed;
use crate::stored_body::BodyRecord;
use crate::{
    AttemptView, DeliveryView, DiskUsage, EncryptionKeys, EventDetail, EventFilter, EventPage,
    EventSummary, Overview, OverviewQuery, Stats, StoreError, StoreReads, StoredEvent,
    StreamCursor, StreamedEvent, UnsignedMetadata,
};

/// A reader over an existing database file. Cloning it shares its
/// connection (the async [`StoreReads`] runs each read on the blocking pool
/// with a clone).
#[derive(Clone)]
pub struct SqliteReader {
    inner: Arc<ReaderInner>,
}

struct ReaderInner {
    path: PathBuf,
    conn: Mutex<Connection>,
    payloads: Arc<PayloadFiles>,
    keys: Option<Arc<EncryptionKeys>>,
}

impl SqliteReader {
    /// Opens an existing database for reading, without encryption keys: a
    /// sealed body or audit headers read as `Corrupt`. A missing file is an
    /// error, not a new empty database.
    pub fn open(path: &Path) -> Result<SqliteReader, StoreError> {
        SqliteReader::open_with_keys(path, None)
    }

    /// Opens an existing database for reading; sealed records are opened
    /// with `keys`. A missing file is an error, not a new empty database.
    pub fn open_with_keys(
        path: &Path,
        keys: Option<Arc<EncryptionKeys>>,
    ) -> Result<SqliteReader, StoreError> {
        let files = Arc::new(PayloadFiles::new(payload_log::directory_for(path)));
        SqliteReader::open_sharing_files(path, keys, files)
    }

    /// As [`SqliteReader::open_with_keys`], reading the payload log
    /// through `payloads`, which other readers of the store share.
    pub(crate) fn open_sharing_files(
        path: &Path,
        keys: Option<Arc<EncryptionKeys>>,
        payloads: Arc<PayloadFiles>,
    ) -> Result<SqliteReader, StoreError> {
        if !path.exists() {
            return Err(StoreError::open(format!(
                "no database at {}",
                path.display()
            )));
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| StoreError::open(format!("{}: {e}", path.display())))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(StoreError::open)?;
        Ok(SqliteReader {
            inner: Arc::new(ReaderInner {
                path: path.to_owned(),
                conn: Mutex::new(conn),
                payloads,
                keys,
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The payload segment files this reader keeps open.
    pub(crate) fn payload_files(&self) -> Arc<PayloadFiles> {
        Arc::clone(&self.inner.payloads)
    }

    pub(super) fn with_conn<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, rusqlite::Error>,
    ) -> Result<T, StoreError> {
        let conn = self
            .inner
            .conn
            .lock()
            .map_err(|_| StoreError::unavailable("reader connection poisoned"))?;
        f(&conn).map_err(StoreError::unavailable)
    }

    /// Checks the reader's key ring against the database, read only (see
    /// `key_check`).
    pub fn check_keys(&self) -> Result<KeyCheck, StoreError> {
        let facts = self.with_conn(super::key_facts::read)?;
        Ok(key_check::evaluate(self.inner.keys.as_deref(), &facts))
    }

    /// Inbox rows by endpoint and status, and the bytes on disk.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        let mut stats = self.row_counts()?;
        stats.disk = Some(self.disk_usage()?);
        Ok(stats)
    }

    fn disk_usage(&self) -> Result<DiskUsage, StoreError> {
        let unavailable = StoreError::unavailable;
        let path = self.path();
        let mut database_bytes = std::fs::metadata(path).map_err(unavailable)?.len();
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        match std::fs::metadata(PathBuf::from(wal)) {
            Ok(metadata) => database_bytes += metadata.len(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(unavailable(error)),
        }
        let (payload_log_bytes, payload_segments) =
            payload_log::usage(&payload_log::directory_for(path)).map_err(unavailable)?;
        Ok(DiskUsage {
            database_bytes,
            payload_log_bytes,
            payload_segments,
        })
    }

    fn row_counts(&self) -> Result<Stats, StoreError> {
        self.with_conn(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT endpoint_id, status, count(*) FROM inbox GROUP BY endpoint_id, status",
            )?;
            let mut stats = Stats::default();
            let rows = statement.query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                ))
            })?;
            for row in rows {
                let (endpoint, status, count) = row?;
                stats.add(&endpoint, &status, count.max(0) as u64);
            }
            Ok(stats)
        })
    }

    /// The event a delivery worker sends.
    pub fn load_event(&self, inbox_id: &str) -> Result<Option<StoredEvent>, StoreError> {
        let found = self.with_conn(|conn| {
            conn.prepare_cached(
                "SELECT i.id, i.endpoint_id, i.provider, i.provider_event_id, i.event_type, i.object_id,
                        i.object_version, i.received_at_ms, i.content_type,
                        i.unsigned_metadata,
                        i.payload_sha256, i.payload_segment, i.payload_offset, i.payload_len, p.payload,
                        i.payload_key_id, i.payload_format, i.payload_raw_len, i.trace_parent
                 FROM inbox i LEFT JOIN inbox_payload p ON p.inbox_id = i.id
                 WHERE i.id = ?1",
            )?
            .query_row(params![inbox_id], |row| {
                let event = StoredEvent {
                    id: row.get(0)?,
                    endpoint_id: row.get(1)?,
                    provider: row.get(2)?,
                    provider_event_id: row.get(3)?,
                    event_type: row.get(4)?,
                    object_id: row.get(5)?,
                    object_version: row.get(6)?,
                    received_at_ms: row.get(7)?,
                    content_type: row.get(8)?,
                    payload: None,
                    unsigned_metadata: UnsignedMetadata::from_column(
                        row.get::<_, Option<String>>(9)?.as_deref(),
                    ),
                    trace_parent: row.get(18)?,
                };
                Ok((event, StoredPayload::from_row(row, 10)?))
            })
            .optional()
        })?;
        let Some((mut event, stored)) = found else {
            return Ok(None);
        };
        event.payload = self.payload(&event.id, stored)?;
        Ok(Some(event))
    }

    /// The raw body, from the payload log (or, for rows written before
    /// schema 4, from `inbox_payload`), opened with its key when it is
    /// sealed, decompressed when it is compressed (`stored_body`), and
    /// checked against its fingerprint.
    ///
    /// A body from the payload log that fails to read, open or match is
    /// read once more from a fresh open of its segment before the error is
    /// reported: the file kept open may not be the segment the row means
    /// (docs/architecture.md §6), and a caller must not take our own stale
    /// handle for corrupt storage.
    pub(crate) fn payload(
        &self,
        inbox_id: &str,
        stored: StoredPayload,
    ) -> Result<Option<Bytes>, StoreError> {
        match self.checked_payload(inbox_id, &stored, Open::Kept) {
            Err(kept) if stored.location.is_some() => {
                let fresh = self.checked_payload(inbox_id, &stored, Open::Fresh);
                if fresh.is_ok() {
                    tracing::warn!(
                        message = "A payload read through a kept segment file failed and succeeded from a fresh open.",
                        inbox_id,
                        error = %kept
                    );
                }
                fresh
            }
            checked => checked,
        }
    }

    fn checked_payload(
        &self,
        inbox_id: &str,
        stored: &StoredPayload,
        how: Open,
    ) -> Result<Option<Bytes>, StoreError> {
        let bytes = match (stored.location, &stored.legacy) {
            (Some(location), _) => self.inner.payloads.read(location, how).map_err(|error| {
                StoreError::unavailable(format!("payload of {inbox_id}: {error}"))
            })?,
            (None, Some(legacy)) => Bytes::copy_from_slice(legacy),
            (None, None) => return Ok(None),
        };
        let bytes = stored
            .record
            .body(self.inner.keys.as_deref(), inbox_id, bytes)?;
        if crate::Fingerprint::of(&bytes).as_bytes() != stored.sha256.as_slice() {
            return Err(StoreError::Corrupt(format!(
                "the stored payload of {inbox_id} does not match its fingerprint"
            )));
        }
        Ok(Some(bytes))
    }

    /// Events, newest first: the first page of `filter` (see
    /// [`StoreReads::list_events`] for the page with its cursor).
    pub fn list_events(&self, filter: &EventFilter) -> Result<Vec<EventSummary>, StoreError> {
        Ok(self.event_page(filter)?.events)
    }

    fn event_page(&self, filter: &EventFilter) -> Result<EventPage, StoreError> {
        let statement = event_query::list_events(filter, Dialect::Sqlite);
        let values = statement.values.into_iter().map(|value| match value {
            QueryValue::Text(text) => rusqlite::types::Value::Text(text),
            QueryValue::Int(int) => rusqlite::types::Value::Integer(int),
        });
        let rows = self.with_conn(|conn| {
            conn.prepare_cached(&statement.sql)?
                .query_map(rusqlite::params_from_iter(values), summary_from_row)?
                .collect()
        })?;
        Ok(EventPage::from_rows(rows, filter.page_size()))
    }

    /// The dashboard's overview numbers (see [`crate::overview`]).
    pub fn overview(&self, query: &OverviewQuery) -> Result<Overview, StoreError> {
        self.with_conn(|conn| super::overview::overview(conn, query))
    }

    /// One event with its deliveries and their attempts; the payload only
    /// when asked (`with_payload`).
    pub fn show_event(
        &self,
        inbox_id: &str,
        with_payload: bool,
    ) -> Result<Option<(EventDetail, Option<Bytes>)>, StoreError> {
        let found = self.with_conn(|conn| {
            let found = conn
                .prepare_cached(
                    "SELECT i.id, i.endpoint_id, i.provider, i.provider_event_id, i.event_type, i.status,
                            i.received_at_ms, i.object_id, i.object_version, i.provider_created_at,
                            i.content_type, i.matched_secret_version,
                            i.payload_sha256, i.payload_segment, i.payload_offset, i.payload_len, p.payload,
                            i.payload_key_id, i.payload_format, i.payload_raw_len, i.fetched_at_ms,
                            i.targets, i.not_routed, i.trace_parent
                     FROM inbox i LEFT JOIN inbox_payload p ON p.inbox_id = i.id
                     WHERE i.id = ?1",
                )?
                .query_row(params![inbox_id], |row| {
                    let stored = StoredPayload::from_row(row, 12)?;
                    let fetched_at_ms = row.get(20)?;
                    Ok((
                        EventDetail {
                            summary: summary_from_row(row)?,
                            object_id: row.get(7)?,
                            object_version: row.get(8)?,
                            provider_created_at: row.get(9)?,
                            content_type: row.get(10)?,
                            matched_secret_version: row.get(11)?,
                            payload_sha256: stored
                                .sha256
                                .iter()
                                .map(|b| format!("{b:02x}"))
                                .collect(),
                            payload_bytes: stored.len(),
                            fetched_at_ms,
                            routed_to: target_list(row.get(21)?),
                            not_routed: target_list(row.get(22)?).unwrap_or_default(),
                            trace_id: trace_id_of(row.get(23)?),
                            deliveries: Vec::new(),
                        },
                        stored,
                    ))
                })
                .optional()?;
            let Some((mut detail, stored)) = found else {
                return Ok(None);
            };
            let mut deliveries = conn.prepare_cached(
                "SELECT id, target, generation, status, attempts, next_attempt_at_ms, last_error, delivered_at_ms
                 FROM delivery WHERE inbox_id = ?1 ORDER BY generation, target",
            )?;
            let mut attempts = conn.prepare_cached(
                "SELECT attempt, finished_at_ms, outcome, error FROM delivery_attempt
                 WHERE delivery_id = ?1 ORDER BY attempt",
            )?;
            let rows: Vec<DeliveryView> = deliveries
                .query_map(params![inbox_id], |row| {
                    Ok(DeliveryView {
                        id: row.get(0)?,
                        target: row.get(1)?,
                        generation: row.get(2)?,
                        status: row.get(3)?,
                        attempts: row.get(4)?,
                        next_attempt_at_ms: row.get(5)?,
                        last_error: row.get(6)?,
                        delivered_at_ms: row.get(7)?,
                        attempt_log: Vec::new(),
                    })
                })?
                .collect::<Result<_, _>>()?;
            for mut delivery in rows {
                delivery.attempt_log = attempts
                    .query_map(params![delivery.id], |row| {
                        Ok(AttemptView {
                            attempt: row.get(0)?,
                            finished_at_ms: row.get(1)?,
                            outcome: AttemptView::outcome_shown(row.get(2)?),
                            error: row.get(3)?,
                        })
                    })?
                    .collect::<Result<_, _>>()?;
                detail.deliveries.push(delivery);
            }
            Ok(Some((detail, stored)))
        })?;
        let Some((detail, stored)) = found else {
            return Ok(None);
        };
        let payload = if with_payload {
            self.payload(&detail.summary.id, stored)?
        } else {
            None
        };
        Ok(Some((detail, payload)))
    }

    /// The request headers kept for audit with an event, opened with their
    /// key when they are sealed; `None` when no such event exists.
    pub fn audit_headers(
        &self,
        inbox_id: &str,
    ) -> Result<Option<Vec<(String, String)>>, StoreError> {
        let found: Option<(String, Option<String>)> = self.with_conn(|conn| {
            conn.prepare_cached("SELECT audit_headers, payload_key_id FROM inbox WHERE id = ?1")?
                .query_row(params![inbox_id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        })?;
        let Some((column, key_id)) = found else {
            return Ok(None);
        };
        sealed::open_audit_headers(
            self.inner.keys.as_deref(),
            key_id.as_deref(),
            inbox_id,
            &column,
        )
        .map(Some)
    }

    /// How many rows are not sealed under key `active_id` (plain ones
    /// included): what `rewrap_batch` has left to do.
    pub(crate) fn count_not_under_key(&self, active_id: &str) -> Result<u64, StoreError> {
        self.with_conn(|conn| super::rewrap::count_not_under_key(conn, active_id))
    }

    /// Whether a committed row references payload segment `segment`.
    pub(crate) fn segment_referenced(&self, segment: i64) -> Result<bool, StoreError> {
        self.with_conn(|conn| {
            conn.prepare_cached(super::purge::SEGMENT_REFERENCED)?
                .query_row([segment], |row| row.get(0))
        })
    }

    /// The bytes at `reference` as stored (sealed or not, unchecked): what
    /// compaction copies forward.
    pub(crate) fn stored_bytes(&self, reference: PayloadRef) -> std::io::Result<Bytes> {
        self.inner
            .payloads
            .read(reference, super::payload_log::Open::Kept)
    }

    /// Closes the cached files of deleted segments.
    pub(crate) fn forget_segments(&self, segments: &[i64]) {
        self.inner.payloads.forget(segments);
    }

    /// What retention would purge now (see [`crate::retention`]).
    pub fn purge_preview(
        &self,
        policy: &crate::RetentionPolicy,
        now_ms: i64,
    ) -> Result<crate::PurgeCounts, StoreError> {
        self.with_conn(|conn| super::purge::preview(conn, policy, now_ms, None))
    }

    /// What is still due, each rule counted up to `cap` (what a purge
    /// batch reports as remaining).
    pub(crate) fn purge_due_up_to(
        &self,
        policy: &crate::RetentionPolicy,
        now_ms: i64,
        cap: usize,
    ) -> Result<crate::PurgeCounts, StoreError> {
        self.with_conn(|conn| super::purge::preview(conn, policy, now_ms, Some(cap)))
    }

    /// Delivery rows by status, for tests and operators.
    pub fn delivery_counts(&self) -> Result<Vec<(String, String, i64)>, StoreError> {
        self.with_conn(|conn| {
            conn.prepare_cached("SELECT target, status, count(*) FROM delivery GROUP BY target, status ORDER BY 1, 2")?
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
                .collect()
        })
    }
}

/// Where a row's raw body is, as read from the row.
pub(crate) struct StoredPayload {
    sha256: Vec<u8>,
    location: Option<PayloadRef>,
    /// The body itself, for rows written before the payload log.
    pub(crate) legacy: Option<Vec<u8>>,
    /// How to turn the stored bytes back into the body.
    pub(crate) record: BodyRecord,
}

impl StoredPayload {
    /// Reads `payload_sha256, payload_segment, payload_offset, payload_len,
    /// inbox_payload.payload, payload_key_id, payload_format,
    /// payload_raw_len` starting at column `first`.
    pub(crate) fn from_row(
        row: &rusqlite::Row<'_>,
        first: usize,
    ) -> Result<StoredPayload, rusqlite::Error> {
        let segment: Option<i64> = row.get(first + 1)?;
        let offset: Option<i64> = row.get(first + 2)?;
        let len: Option<i64> = row.get(first + 3)?;
        let location = match (segment, offset, len) {
            (Some(segment), Some(offset), Some(len)) => Some(PayloadRef {
                segment,
                offset,
                len,
            }),
            _ => None,
        };
        Ok(StoredPayload {
            sha256: row.get(first)?,
            location,
            legacy: row.get(first + 4)?,
            record: BodyRecord {
                key_id: row.get(first + 5)?,
                format: row.get(first + 6)?,
                raw_len: row.get(first + 7)?,
            },
        })
    }

    /// The payload segment the body is in, if it is in the log.
    pub(crate) fn segment(&self) -> Option<i64> {
        self.location.map(|location| location.segment)
    }

    /// The length of the raw body (not of its sealed form).
    fn len(&self) -> Option<usize> {
        let stored = match (&self.location, &self.legacy) {
            (Some(location), _) => usize::try_from(location.len).ok(),
            (None, Some(legacy)) => Some(legacy.len()),
            (None, None) => None,
        }?;
        Some(self.record.body_len(stored))
    }
}

fn summary_from_row(row: &rusqlite::Row<'_>) -> Result<EventSummary, rusqlite::Error> {
    Ok(EventSummary {
        id: row.get(0)?,
        endpoint_id: row.get(1)?,
        provider: row.get(2)?,
        provider_event_id: row.get(3)?,
        event_type: row.get(4)?,
        status: row.get(5)?,
        received_at_ms: row.get(6)?,
    })
}

impl SqliteReader {
    /// Runs a read on the blocking pool: rusqlite calls block.
    async fn blocking<T: Send + 'static>(
        &self,
        read: impl FnOnce(&SqliteReader) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let reader = self.clone();
        tokio::task::spawn_blocking(move || read(&reader))
            .await
            .map_err(StoreError::unavailable)?
    }
}

#[async_trait]
impl StoreReads for SqliteReader {
    async fn list_events(&self, filter: &EventFilter) -> Result<EventPage, StoreError> {
        let filter = filter.clone();
        self.blocking(move |reader| reader.event_page(&filter))
            .await
    }

    async fn show_event(
        &self,
        inbox_id: &str,
        with_payload: bool,
    ) -> Result<Option<(EventDetail, Option<Bytes>)>, StoreError> {
        let inbox_id = inbox_id.to_owned();
        self.blocking(move |reader| reader.show_event(&inbox_id, with_payload))
            .await
    }

    async fn audit_headers(
        &self,
        inbox_id: &str,
    ) -> Result<Option<Vec<(String, String)>>, StoreError> {
        let inbox_id = inbox_id.to_owned();
        self.blocking(move |reader| reader.audit_headers(&inbox_id))
            .await
    }

    async fn stats(&self) -> Result<Stats, StoreError> {
        self.blocking(|reader| reader.stats()).await
    }

    async fn target_gates(&self) -> Result<Vec<crate::TargetGateView>, StoreError> {
        self.blocking(|reader| reader.with_conn(super::target_gates::list))
            .await
    }

    async fn overview(&self, query: &OverviewQuery) -> Result<Overview, StoreError> {
        let query = query.clone();
        self.blocking(move |reader| reader.overview(&query)).await
    }

    async fn stream_start(
        &self,
        endpoint_id: &str,
        since_ms: Option<i64>,
    ) -> Result<StreamCursor, StoreError> {
        let endpoint_id = endpoint_id.to_owned();
        self.blocking(move |reader| {
            reader.with_conn(|conn| super::stream::start(conn, &endpoint_id, since_ms))
        })
        .await
    }

    async fn stream_after(
        &self,
        endpoint_id: &str,
        after: &StreamCursor,
        limit: usize,
    ) -> Result<Vec<StreamedEvent>, StoreError> {
        let endpoint_id = endpoint_id.to_owned();
        let after = after.clone();
        self.blocking(move |reader| {
            reader.with_conn(|conn| super::stream::after(conn, &endpoint_id, &after, limit))
        })
        .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.blocking(|reader| reader.with_conn(|conn| conn.query_row("SELECT 1", [], |_| Ok(()))))
            .await
    }
}
