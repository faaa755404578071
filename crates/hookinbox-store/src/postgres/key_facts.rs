//! What the key check reads from and writes to a PostgreSQL database (see
//! `key_check`): the stored check values, the key ids that sealed rows,
//! whether the inbox has a row; and new check values.

use deadpool_postgres::Client;

use super::db_error::PgError;
use crate::key_check::KeyFacts;

/// The distinct `payload_key_id`s, by a seek on `inbox_key_id` per id
/// (migration 8) rather than a walk of the whole index (PostgreSQL has no
/// skip scan): each step asks for the smallest id above the last one.
pub(crate) const USED_KEY_IDS: &str = "
    WITH RECURSIVE used(key_id) AS (
        SELECT min(payload_key_id) FROM inbox
        UNION ALL
        SELECT (SELECT min(payload_key_id) FROM inbox WHERE payload_key_id > used.key_id)
        FROM used WHERE used.key_id IS NOT NULL
    )
    SELECT key_id FROM used WHERE key_id IS NOT NULL";

/// Reads the facts. A schema not yet migrated to check values (a reader
/// on a database an older build wrote) has none stored.
pub(crate) async fn read(client: &Client) -> Result<KeyFacts, PgError> {
    let has_table: bool = client
        .query_one(
            "SELECT to_regclass('encryption_key_check') IS NOT NULL",
            &[],
        )
        .await?
        .try_get(0)?;
    let mut stored = Vec::new();
    if has_table {
        for row in client
            .query(
                "SELECT key_id, check_value FROM encryption_key_check ORDER BY key_id",
                &[],
            )
            .await?
        {
            stored.push((row.try_get(0)?, row.try_get(1)?));
        }
    }
    let mut used = Vec::new();
    for row in client.query(USED_KEY_IDS, &[]).await? {
        used.push(row.try_get(0)?);
    }
    let holds_events: bool = client
        .query_one("SELECT EXISTS (SELECT 1 FROM inbox)", &[])
        .await?
        .try_get(0)?;
    Ok(KeyFacts {
        stored,
        used,
        holds_events,
    })
}

/// Records check values; an id that already has one keeps it (the first
/// recorded wins, and the caller reads back and verifies).
pub(crate) async fn record(client: &Client, values: &[(String, Vec<u8>)]) -> Result<(), PgError> {
    let insert = client
        .prepare(
            "INSERT INTO encryption_key_check (key_id, check_value, recorded_at_ms)
             VALUES ($1, $2, (extract(epoch FROM now()) * 1000)::bigint)
             ON CONFLICT (key_id) DO NOTHING",
        )
        .await?;
    for (key_id, value) in values {
        client.execute(&insert, &[key_id, value]).await?;
    }
    Ok(())
}
