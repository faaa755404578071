//! The `learned_secret` rows on SQLite (see `crate::learned_secrets`):
//! written and read by the writer thread, so a repeated handover and the
//! per-endpoint bound are decided in one transaction.

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};
use secrecy::SecretString;

use super::SqliteStore;
use crate::learned_secrets::{self, StoredRow, MAX_LEARNED_PER_ENDPOINT};
use crate::sealed::Sealed;
use crate::{Learned, LearnedSecret, LearnedSecrets, StoreError};

fn learn(
    conn: &Connection,
    endpoint_id: &str,
    fingerprint: &str,
    sealed: &Sealed,
    now_ms: i64,
) -> Result<Learned, rusqlite::Error> {
    let known: Option<i64> = conn
        .prepare_cached(
            "SELECT number FROM learned_secret WHERE endpoint_id = ?1 AND fingerprint = ?2",
        )?
        .query_row(params![endpoint_id, fingerprint], |row| row.get(0))
        .optional()?;
    if let Some(number) = known {
        return Ok(Learned::Known(number));
    }
    let (count, last): (i64, i64) = conn
        .prepare_cached(
            "SELECT count(*), coalesce(max(number), 0) FROM learned_secret WHERE endpoint_id = ?1",
        )?
        .query_row(params![endpoint_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
    if count >= MAX_LEARNED_PER_ENDPOINT {
        return Ok(Learned::Full);
    }
    let number = last + 1;
    conn.prepare_cached(
        "INSERT INTO learned_secret (endpoint_id, number, fingerprint, learned_at_ms, key_id, sealed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        endpoint_id,
        number,
        fingerprint,
        now_ms,
        sealed.key_id,
        sealed.bytes
    ])?;
    Ok(Learned::New(number))
}

fn rows(conn: &Connection, endpoint_id: &str) -> Result<Vec<StoredRow>, rusqlite::Error> {
    conn.prepare_cached(
        "SELECT number, learned_at_ms, fingerprint, key_id, sealed FROM learned_secret
         WHERE endpoint_id = ?1 ORDER BY number",
    )?
    .query_map(params![endpoint_id], |row| {
        Ok(StoredRow {
            number: row.get(0)?,
            learned_at_ms: row.get(1)?,
            fingerprint: row.get(2)?,
            key_id: row.get(3)?,
            sealed: row.get(4)?,
        })
    })?
    .collect()
}

#[async_trait]
impl LearnedSecrets for SqliteStore {
    async fn learn(
        &self,
        endpoint_id: &str,
        secret: &SecretString,
        now_ms: i64,
    ) -> Result<Learned, StoreError> {
        let fingerprint = learned_secrets::fingerprint(secret);
        let sealed =
            learned_secrets::seal(self.keys.as_deref(), endpoint_id, &fingerprint, secret)?;
        let endpoint_id = endpoint_id.to_owned();
        self.write(0, move |conn, _| {
            Ok(learn(conn, &endpoint_id, &fingerprint, &sealed, now_ms)?)
        })
        .await
    }

    async fn learned(&self, endpoint_id: &str) -> Result<Vec<LearnedSecret>, StoreError> {
        let owned = endpoint_id.to_owned();
        let stored = self
            .write(0, move |conn, _| Ok(rows(conn, &owned)?))
            .await?;
        stored
            .into_iter()
            .map(|row| learned_secrets::open(self.keys.as_deref(), endpoint_id, row))
            .collect()
    }
}
