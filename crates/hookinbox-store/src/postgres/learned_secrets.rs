//! The `learned_secret` rows on PostgreSQL (see `crate::learned_secrets`).
//! A handover is one transaction holding the endpoint's advisory lock, so
//! two processes taking a handover of one endpoint at once number their
//! rows one after the other, and the per-endpoint bound holds.

use async_trait::async_trait;
use secrecy::SecretString;

use super::advisory_lock::{lock_key, LockPurpose};
use super::db_error::PgError;
use super::PostgresStore;
use crate::learned_secrets::{self, StoredRow, MAX_LEARNED_PER_ENDPOINT};
use crate::{Learned, LearnedSecret, LearnedSecrets, StoreError};

#[async_trait]
impl LearnedSecrets for PostgresStore {
    async fn learn(
        &self,
        endpoint_id: &str,
        secret: &SecretString,
        now_ms: i64,
    ) -> Result<Learned, StoreError> {
        let fingerprint = learned_secrets::fingerprint(secret);
        let sealed = learned_secrets::seal(
            self.options.keys.as_deref(),
            endpoint_id,
            &fingerprint,
            secret,
        )?;
        let mut client = self.client().await?;
        let learned = async {
            let tx = client.transaction().await?;
            let key = lock_key(
                &self.schema,
                LockPurpose::LearnedSecret,
                &[endpoint_id.as_bytes()],
            );
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&key])
                .await?;
            let known = tx
                .query_opt(
                    "SELECT number FROM learned_secret WHERE endpoint_id = $1 AND fingerprint = $2",
                    &[&endpoint_id, &fingerprint],
                )
                .await?;
            if let Some(row) = known {
                tx.commit().await?;
                return Ok::<_, PgError>(Learned::Known(row.try_get(0)?));
            }
            let row = tx
                .query_one(
                    "SELECT count(*), coalesce(max(number), 0)::bigint FROM learned_secret WHERE endpoint_id = $1",
                    &[&endpoint_id],
                )
                .await?;
            let (count, last): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
            if count >= MAX_LEARNED_PER_ENDPOINT {
                tx.commit().await?;
                return Ok(Learned::Full);
            }
            let number = last + 1;
            tx.execute(
                "INSERT INTO learned_secret (endpoint_id, number, fingerprint, learned_at_ms, key_id, sealed)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &endpoint_id,
                    &number,
                    &fingerprint,
                    &now_ms,
                    &sealed.key_id,
                    &sealed.bytes,
                ],
            )
            .await?;
            tx.commit().await?;
            Ok(Learned::New(number))
        };
        Ok(learned.await?)
    }

    async fn learned(&self, endpoint_id: &str) -> Result<Vec<LearnedSecret>, StoreError> {
        let client = self.client().await?;
        let stored = async {
            let rows = client
                .query(
                    "SELECT number, learned_at_ms, fingerprint, key_id, sealed FROM learned_secret
                     WHERE endpoint_id = $1 ORDER BY number",
                    &[&endpoint_id],
                )
                .await?;
            rows.iter()
                .map(|row| -> Result<StoredRow, PgError> {
                    Ok(StoredRow {
                        number: row.try_get(0)?,
                        learned_at_ms: row.try_get(1)?,
                        fingerprint: row.try_get(2)?,
                        key_id: row.try_get(3)?,
                        sealed: row.try_get(4)?,
                    })
                })
                .collect::<Result<Vec<_>, PgError>>()
        };
        stored
            .await?
            .into_iter()
            .map(|row| learned_secrets::open(self.options.keys.as_deref(), endpoint_id, row))
            .collect()
    }
}
