//! Re-sealing rows under the active key (`PostgresStore::rewrap_batch`):
//! in one transaction, a batch of rows whose `payload_key_id` is not the
//! active key (plain rows included) is locked, each body and audit headers
//! opened with the old key (the body checked against its fingerprint) and
//! sealed again under the active key, and written back in place. A body
//! is re-sealed the way an accept seals it (`StoredBody::new`): compressed
//! when that makes it smaller, so a compressed body stays compressed, and
//! its `payload_format` and `payload_raw_len` are written with it.
//!
//! The rows are locked `FOR UPDATE … SKIP LOCKED`: a row another
//! transaction holds (a settlement changing its status) is left for a
//! later batch instead of waited for, so two rewraps, or a rewrap and the
//! workers, never wait on each other. Such rows are still counted in
//! `remaining`.

use deadpool_postgres::Transaction;

use super::db_error::PgError;
use super::reader::{body_record, checked_payload};
use crate::sealed;
use crate::stored_body::StoredBody;
use crate::{EncryptionKeys, RewrapProgress, StoreError};

/// The rows not under key $1, as ranges of `inbox_key_id` (migration 8):
/// `IS DISTINCT FROM` alone would be read as a scan of the whole inbox.
const NOT_UNDER: &str =
    "(i.payload_key_id IS NULL OR i.payload_key_id < $1 OR i.payload_key_id > $1)";

/// Up to $2 rows not under key $1, locked. No `ORDER BY`: after a
/// rotation every row is due, and sorting them would read them all for
/// each batch.
pub(crate) fn not_under_key() -> String {
    format!(
        "SELECT i.id, i.payload_sha256, i.payload_key_id, i.audit_headers, p.payload,
                p.payload_format, p.payload_raw_len
         FROM inbox i LEFT JOIN inbox_payload p ON p.inbox_id = i.id
         WHERE {NOT_UNDER} LIMIT $2
         FOR UPDATE OF i SKIP LOCKED"
    )
}

pub(crate) fn count_not_under() -> String {
    format!("SELECT count(*) FROM inbox i WHERE {NOT_UNDER}")
}

/// Writes the re-sealed rows: audit headers and key id on the inbox row,
/// the body (where there is one) in `inbox_payload`.
const WRITE_BACK: &str = "
    WITH resealed AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $5::int2[], $6::int8[])
               AS r(id, audit_headers, payload, payload_format, payload_raw_len)
    ), rows AS (
        UPDATE inbox i SET payload_key_id = $4, audit_headers = r.audit_headers
        FROM resealed r WHERE i.id = r.id
    )
    UPDATE inbox_payload p
    SET payload = r.payload, payload_format = r.payload_format, payload_raw_len = r.payload_raw_len
    FROM resealed r WHERE p.inbox_id = r.id AND r.payload IS NOT NULL";

/// Re-seals up to `limit` rows under the active key of `keys` inside `tx`,
/// which the caller commits. A row that cannot be opened (unknown key,
/// tampered bytes) fails the batch as `Corrupt`, naming it.
pub(crate) async fn rewrap(
    tx: &Transaction<'_>,
    keys: &EncryptionKeys,
    limit: usize,
) -> Result<RewrapProgress, StoreError> {
    let active = keys.active_id();
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let select = tx
        .prepare_cached(&not_under_key())
        .await
        .map_err(PgError::from)?;
    let rows = tx
        .query(&select, &[&active, &limit])
        .await
        .map_err(PgError::from)?;
    let mut ids = Vec::with_capacity(rows.len());
    let mut audit_columns = Vec::with_capacity(rows.len());
    let mut payloads: Vec<Option<Vec<u8>>> = Vec::with_capacity(rows.len());
    let mut formats: Vec<Option<i16>> = Vec::with_capacity(rows.len());
    let mut raw_lens: Vec<Option<i64>> = Vec::with_capacity(rows.len());
    for row in &rows {
        let read = || -> Result<_, tokio_postgres::Error> {
            Ok((
                row.try_get::<_, String>(0)?,
                row.try_get::<_, Vec<u8>>(1)?,
                row.try_get::<_, String>(3)?,
                row.try_get::<_, Option<Vec<u8>>>(4)?,
                body_record(row, 2, 5)?,
            ))
        };
        let (id, sha256, audit_column, stored, record) = read().map_err(PgError::from)?;
        let key_id = record.key_id.clone();
        let body = checked_payload(Some(keys), &id, &sha256, &record, stored)?;
        let resealed = body
            .map(|body| StoredBody::new(Some(keys), &id, &body))
            .transpose()?;
        formats.push(resealed.as_ref().map(|stored| stored.format.column()));
        raw_lens.push(resealed.as_ref().map(StoredBody::raw_len_column));
        let resealed = resealed.map(|stored| stored.bytes.to_vec());
        let audit_json =
            sealed::open_audit_json(Some(keys), key_id.as_deref(), &id, &audit_column)?;
        audit_columns.push(sealed::seal_audit_headers(Some(keys), &id, &audit_json)?);
        payloads.push(resealed);
        ids.push(id);
    }
    if !ids.is_empty() {
        let write = tx.prepare_cached(WRITE_BACK).await.map_err(PgError::from)?;
        tx.execute(
            &write,
            &[
                &ids,
                &audit_columns,
                &payloads,
                &active,
                &formats,
                &raw_lens,
            ],
        )
        .await
        .map_err(PgError::from)?;
    }
    let count = tx
        .prepare_cached(&count_not_under())
        .await
        .map_err(PgError::from)?;
    let remaining: i64 = tx
        .query_one(&count, &[&active])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(PgError::from)?;
    Ok(RewrapProgress {
        rewrapped: ids.len() as u64,
        remaining: u64::try_from(remaining).unwrap_or(0),
    })
}
