//! Reads of a PostgreSQL inbox: the event a worker delivers, and what
//! operators list, show and count. A reader opens no batcher and runs no
//! migration, so the CLI can use one against a database others write.
//!
//! With encryption keys (`PostgresOptions::keys`), sealed bodies and audit
//! headers are opened with the key their row names (`payload_key_id`);
//! rows without one are plain and read as they are, keys or not (a
//! database from before encryption).

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use deadpool_postgres::Pool;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::db_error::PgError;
use super::pool::PostgresOptions;
use crate::event_query::{self, Dialect, Value as QueryValue};
use crate::event_view::{target_list, trace_id_of};
use crate::key_check::{self, KeyCheck};
use crate::sealed;
use crate::stored_body::BodyRecord;
use crate::{
    AttemptView, DeliveryView, EncryptionKeys, EventDetail, EventFilter, EventPage, EventSummary,
    Fingerprint, Overview, OverviewQuery, Stats, StoreError, StoreReads, StoredEvent, StreamCursor,
    StreamedEvent, UnsignedMetadata,
};

/// The columns of `inbox i` and `inbox_payload p` that make a
/// [`StoredEvent`], in the order `stored_event_from_row` reads them: one
/// list for `load_event` and the lease that reads its events itself.
macro_rules! stored_event_columns {
    () => {
        "i.id, i.endpoint_id, i.provider, i.provider_event_id, i.event_type, i.object_id, \
         i.object_version, i.received_at_ms, i.content_type, i.unsigned_metadata, \
         i.payload_sha256, p.payload, i.payload_key_id, p.payload_format, p.payload_raw_len, \
         i.trace_parent"
    };
}
pub(crate) use stored_event_columns;

/// Reads over a pool of connections.
#[derive(Clone)]
pub struct PostgresReader {
    pool: Pool,
    keys: Option<Arc<EncryptionKeys>>,
}

impl PostgresReader {
    /// Connects (one round trip, so a wrong URL or a refused password is
    /// reported now, not at the first command).
    pub async fn connect(options: &PostgresOptions) -> Result<PostgresReader, StoreError> {
        let reader = PostgresReader {
            pool: options.pool()?,
            keys: options.keys.clone(),
        };
        reader.ping_db().await.map_err(StoreError::open)?;
        Ok(reader)
    }

    pub(crate) fn with_pool(pool: Pool, keys: Option<Arc<EncryptionKeys>>) -> PostgresReader {
        PostgresReader { pool, keys }
    }

    /// Checks the reader's key ring against the database, read only (see
    /// `key_check`).
    pub async fn check_keys(&self) -> Result<KeyCheck, StoreError> {
        let client = self.pool.get().await.map_err(PgError::from)?;
        let facts = super::key_facts::read(&client).await?;
        Ok(key_check::evaluate(self.keys.as_deref(), &facts))
    }

    async fn ping_db(&self) -> Result<(), PgError> {
        let client = self.pool.get().await?;
        client.simple_query("SELECT 1").await?;
        Ok(())
    }

    /// The event a delivery worker sends, its body checked against its
    /// fingerprint.
    pub async fn load_event(&self, inbox_id: &str) -> Result<Option<StoredEvent>, StoreError> {
        let client = self.pool.get().await.map_err(PgError::from)?;
        let statement = client
            .prepare_cached(concat!(
                "SELECT ",
                stored_event_columns!(),
                " FROM inbox i LEFT JOIN inbox_payload p ON p.inbox_id = i.id WHERE i.id = $1"
            ))
            .await
            .map_err(PgError::from)?;
        let Some(row) = client
            .query_opt(&statement, &[&inbox_id])
            .await
            .map_err(PgError::from)?
        else {
            return Ok(None);
        };
        Ok(Some(stored_event_from_row(self.keys.as_deref(), &row)?))
    }

    /// The event in `row`, whose first columns are [`stored_event_columns`]
    /// of a LEFT JOIN on `inbox i` (the lease reads them in its own
    /// statement): `None` when the join found no inbox row.
    pub(crate) fn event_from_joined_row(
        &self,
        row: &Row,
    ) -> Result<Option<StoredEvent>, StoreError> {
        if row
            .try_get::<_, Option<String>>(0)
            .map_err(PgError::from)?
            .is_none()
        {
            return Ok(None);
        }
        Ok(Some(stored_event_from_row(self.keys.as_deref(), row)?))
    }

    async fn page(&self, filter: &EventFilter) -> Result<EventPage, PgError> {
        let statement = event_query::list_events(filter, Dialect::Postgres);
        let client = self.pool.get().await?;
        let prepared = client.prepare_cached(&statement.sql).await?;
        let values: Vec<&(dyn ToSql + Sync)> = statement
            .values
            .iter()
            .map(|value| -> &(dyn ToSql + Sync) {
                match value {
                    QueryValue::Text(text) => text,
                    QueryValue::Int(int) => int,
                }
            })
            .collect();
        let rows = client.query(&prepared, &values).await?;
        let events = rows
            .iter()
            .map(summary_from_row)
            .collect::<Result<_, _>>()?;
        Ok(EventPage::from_rows(events, filter.page_size()))
    }

    async fn detail(
        &self,
        inbox_id: &str,
        with_payload: bool,
    ) -> Result<Option<(EventDetail, Option<Bytes>)>, PgError> {
        let client = self.pool.get().await?;
        let event = client
            .prepare_cached(
                "SELECT i.id, i.endpoint_id, i.provider, i.provider_event_id, i.event_type, i.status,
                        i.received_at_ms, i.object_id, i.object_version, i.provider_created_at,
                        i.content_type, i.matched_secret_version, i.payload_sha256,
                        octet_length(p.payload),
                        CASE WHEN $2 THEN p.payload END, i.payload_key_id, i.fetched_at_ms,
                        p.payload_format, p.payload_raw_len, i.targets, i.not_routed,
                        i.trace_parent
                 FROM inbox i LEFT JOIN inbox_payload p ON p.inbox_id = i.id
                 WHERE i.id = $1",
            )
            .await?;
        let Some(row) = client
            .query_opt(&event, &[&inbox_id, &with_payload])
            .await?
        else {
            return Ok(None);
        };
        let sha256: Vec<u8> = row.try_get(12)?;
        let stored_bytes: Option<i32> = row.try_get(13)?;
        let record = body_record(&row, 15, 17)?;
        let payload_bytes = stored_bytes
            .and_then(|n| usize::try_from(n).ok())
            .map(|n| record.body_len(n));
        let payload = if with_payload {
            checked_payload(
                self.keys.as_deref(),
                inbox_id,
                &sha256,
                &record,
                row.try_get(14)?,
            )?
        } else {
            None
        };
        let mut detail = EventDetail {
            summary: summary_from_row(&row)?,
            object_id: row.try_get(7)?,
            object_version: row.try_get(8)?,
            provider_created_at: row.try_get(9)?,
            content_type: row.try_get(10)?,
            matched_secret_version: row.try_get(11)?,
            payload_sha256: sha256.iter().map(|b| format!("{b:02x}")).collect(),
            payload_bytes,
            fetched_at_ms: row.try_get(16)?,
            routed_to: target_list(row.try_get(19)?),
            not_routed: target_list(row.try_get(20)?).unwrap_or_default(),
            trace_id: trace_id_of(row.try_get(21)?),
            deliveries: Vec::new(),
        };
        let deliveries = client
            .prepare_cached(
                "SELECT id, target, generation, status, attempts, next_attempt_at_ms, last_error, delivered_at_ms
                 FROM delivery WHERE inbox_id = $1 ORDER BY generation, target",
            )
            .await?;
        let attempts = client
            .prepare_cached(
                "SELECT a.delivery_id, a.attempt, a.finished_at_ms, a.outcome, a.error
                 FROM delivery_attempt a JOIN delivery d ON d.id = a.delivery_id
                 WHERE d.inbox_id = $1 ORDER BY a.delivery_id, a.attempt",
            )
            .await?;
        let mut attempt_log: Vec<(i64, AttemptView)> = Vec::new();
        for row in client.query(&attempts, &[&inbox_id]).await? {
            attempt_log.push((
                row.try_get(0)?,
                AttemptView {
                    attempt: row.try_get(1)?,
                    finished_at_ms: row.try_get(2)?,
                    outcome: AttemptView::outcome_shown(row.try_get(3)?),
                    error: row.try_get(4)?,
                },
            ));
        }
        for row in client.query(&deliveries, &[&inbox_id]).await? {
            let id: i64 = row.try_get(0)?;
            detail.deliveries.push(DeliveryView {
                id,
                target: row.try_get(1)?,
                generation: row.try_get(2)?,
                status: row.try_get(3)?,
                attempts: row.try_get(4)?,
                next_attempt_at_ms: row.try_get(5)?,
                last_error: row.try_get(6)?,
                delivered_at_ms: row.try_get(7)?,
                attempt_log: attempt_log
                    .iter()
                    .filter(|(delivery_id, _)| *delivery_id == id)
                    .map(|(_, attempt)| attempt.clone())
                    .collect(),
            });
        }
        Ok(Some((detail, payload)))
    }

    /// The request headers kept for audit with an event, opened with their
    /// key when they are sealed; `None` when no such event exists.
    pub async fn audit_headers(
        &self,
        inbox_id: &str,
    ) -> Result<Option<Vec<(String, String)>>, StoreError> {
        let client = self.pool.get().await.map_err(PgError::from)?;
        let statement = client
            .prepare_cached("SELECT audit_headers, payload_key_id FROM inbox WHERE id = $1")
            .await
            .map_err(PgError::from)?;
        let Some(row) = client
            .query_opt(&statement, &[&inbox_id])
            .await
            .map_err(PgError::from)?
        else {
            return Ok(None);
        };
        let column: String = row.try_get(0).map_err(PgError::from)?;
        let key_id: Option<String> = row.try_get(1).map_err(PgError::from)?;
        sealed::open_audit_headers(self.keys.as_deref(), key_id.as_deref(), inbox_id, &column)
            .map(Some)
    }

    async fn row_counts(&self) -> Result<Stats, PgError> {
        let client = self.pool.get().await?;
        let statement = client
            .prepare_cached(
                "SELECT endpoint_id, status, count(*) FROM inbox GROUP BY endpoint_id, status",
            )
            .await?;
        let mut stats = Stats::default();
        for row in client.query(&statement, &[]).await? {
            let count: i64 = row.try_get(2)?;
            stats.add(
                row.try_get(0)?,
                row.try_get(1)?,
                u64::try_from(count).unwrap_or(0),
            );
        }
        Ok(stats)
    }
}

#[async_trait]
impl StoreReads for PostgresReader {
    async fn list_events(&self, filter: &EventFilter) -> Result<EventPage, StoreError> {
        Ok(self.page(filter).await?)
    }

    async fn show_event(
        &self,
        inbox_id: &str,
        with_payload: bool,
    ) -> Result<Option<(EventDetail, Option<Bytes>)>, StoreError> {
        Ok(self.detail(inbox_id, with_payload).await?)
    }

    async fn audit_headers(
        &self,
        inbox_id: &str,
    ) -> Result<Option<Vec<(String, String)>>, StoreError> {
        PostgresReader::audit_headers(self, inbox_id).await
    }

    async fn stats(&self) -> Result<Stats, StoreError> {
        Ok(self.row_counts().await?)
    }

    async fn target_gates(&self) -> Result<Vec<crate::TargetGateView>, StoreError> {
        let client = self.pool.get().await.map_err(PgError::from)?;
        Ok(super::target_gates::list(&client).await?)
    }

    async fn overview(&self, query: &OverviewQuery) -> Result<Overview, StoreError> {
        let client = self.pool.get().await.map_err(PgError::from)?;
        Ok(super::overview::overview(&client, query).await?)
    }

    async fn stream_start(
        &self,
        endpoint_id: &str,
        since_ms: Option<i64>,
    ) -> Result<StreamCursor, StoreError> {
        let client = self.pool.get().await.map_err(PgError::from)?;
        Ok(super::stream::start(&client, endpoint_id, since_ms).await?)
    }

    async fn stream_after(
        &self,
        endpoint_id: &str,
        after: &StreamCursor,
        limit: usize,
    ) -> Result<Vec<StreamedEvent>, StoreError> {
        let client = self.pool.get().await.map_err(PgError::from)?;
        Ok(super::stream::after(&client, endpoint_id, after, limit).await?)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        Ok(self.ping_db().await?)
    }
}

/// A row of `load_event`'s query as the event a worker delivers.
fn stored_event_from_row(keys: Option<&EncryptionKeys>, row: &Row) -> Result<StoredEvent, PgError> {
    let id: String = row.try_get(0)?;
    let sha256: Vec<u8> = row.try_get(10)?;
    let record = body_record(row, 12, 13)?;
    let payload = checked_payload(keys, &id, &sha256, &record, row.try_get(11)?)?;
    Ok(StoredEvent {
        endpoint_id: row.try_get(1)?,
        provider: row.try_get(2)?,
        provider_event_id: row.try_get(3)?,
        event_type: row.try_get(4)?,
        object_id: row.try_get(5)?,
        object_version: row.try_get(6)?,
        received_at_ms: row.try_get(7)?,
        content_type: row.try_get(8)?,
        payload,
        unsigned_metadata: UnsignedMetadata::from_column(
            row.try_get::<_, Option<String>>(9)?.as_deref(),
        ),
        trace_parent: row.try_get(15)?,
        id,
    })
}

/// What `row` records about its body: `payload_key_id` at column
/// `key_id`, then `payload_format` and `payload_raw_len` from column
/// `format` on.
pub(crate) fn body_record(
    row: &Row,
    key_id: usize,
    format: usize,
) -> Result<BodyRecord, tokio_postgres::Error> {
    Ok(BodyRecord {
        key_id: row.try_get(key_id)?,
        format: row.try_get::<_, Option<i16>>(format)?.map(i64::from),
        raw_len: row.try_get(format + 1)?,
    })
}

/// The stored body, opened with the key that sealed it and decompressed
/// as its `record` says (`stored_body`), and checked against the
/// fingerprint recorded with it; `None` once raw retention removed it.
pub(crate) fn checked_payload(
    keys: Option<&EncryptionKeys>,
    inbox_id: &str,
    sha256: &[u8],
    record: &BodyRecord,
    payload: Option<Vec<u8>>,
) -> Result<Option<Bytes>, StoreError> {
    let Some(payload) = payload else {
        return Ok(None);
    };
    let payload = record.body(keys, inbox_id, Bytes::from(payload))?;
    if Fingerprint::of(&payload).as_bytes() != sha256 {
        return Err(StoreError::Corrupt(format!(
            "the stored payload of {inbox_id} does not match its fingerprint"
        )));
    }
    Ok(Some(payload))
}

fn summary_from_row(row: &Row) -> Result<EventSummary, tokio_postgres::Error> {
    Ok(EventSummary {
        id: row.try_get(0)?,
        endpoint_id: row.try_get(1)?,
        provider: row.try_get(2)?,
        provider_event_id: row.try_get(3)?,
        event_type: row.try_get(4)?,
        status: row.try_get(5)?,
        received_at_ms: row.try_get(6)?,
    })
}
