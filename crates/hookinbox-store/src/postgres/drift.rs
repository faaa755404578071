//! Internal drift on PostgreSQL (see [`crate::drift`]): found with plain
//! reads, repaired in one transaction that first locks the inbox rows it
//! touches (sorted, as settling does: see `outbox`), so a settlement
//! finishing the same event and this repair happen one after the other,
//! and every statement re-checks the condition the row was found in.

use deadpool_postgres::{GenericClient, Transaction};

use super::db_error::PgError;
use super::first_column::first_column;
use crate::drift::uuid_v7_floor;
use crate::{Drift, DriftQuery, DriftRepair, MissingDelivery, Repaired};

pub(crate) async fn find(
    client: &impl GenericClient,
    query: &DriftQuery,
) -> Result<Drift, PgError> {
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
    let expired = client
        .prepare_cached(
            "SELECT id FROM delivery
             WHERE status = 'LEASED' AND lease_until_ms < $1
             ORDER BY lease_until_ms LIMIT $2",
        )
        .await?;
    let expired_leases = client
        .query(&expired, &[&query.expired_before_ms, &limit])
        .await?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()?;
    let stale = client
        .prepare_cached(
            "SELECT i.id FROM inbox i
             WHERE i.status = 'ACCEPTED'
               AND NOT EXISTS (SELECT 1 FROM delivery d
                               WHERE d.inbox_id = i.id AND d.status IN ('PENDING', 'LEASED'))
               AND (EXISTS (SELECT 1 FROM delivery d WHERE d.inbox_id = i.id)
                    OR i.targets IS NULL OR i.targets = '[]')
             ORDER BY i.received_at_ms LIMIT $1",
        )
        .await?;
    let stale_statuses = client
        .query(&stale, &[&limit])
        .await?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()?;
    let missing = client
        .prepare_cached(
            "SELECT i.id, i.endpoint_id, t.target
             FROM inbox i CROSS JOIN LATERAL json_array_elements_text(i.targets::json) AS t(target)
             WHERE i.id >= $1 AND i.targets IS NOT NULL AND i.targets <> '[]'
               AND NOT EXISTS (SELECT 1 FROM delivery d
                               WHERE d.inbox_id = i.id AND d.target = t.target)
             ORDER BY i.id, t.target LIMIT $2",
        )
        .await?;
    let missing_deliveries = client
        .query(&missing, &[&uuid_v7_floor(query.accepted_since_ms), &limit])
        .await?
        .iter()
        .map(|row| {
            Ok(MissingDelivery {
                inbox_id: row.try_get(0)?,
                endpoint_id: row.try_get(1)?,
                target: row.try_get(2)?,
            })
        })
        .collect::<Result<_, tokio_postgres::Error>>()?;
    Ok(Drift {
        expired_leases,
        stale_statuses,
        missing_deliveries,
    })
}

/// Applies `repair` inside `tx`: missing deliveries first (an event that
/// lacked all of them is then open again, not stale), then statuses, then
/// leases.
pub(crate) async fn repair(
    tx: &Transaction<'_>,
    repair: &DriftRepair,
) -> Result<Repaired, PgError> {
    let mut repaired = Repaired::default();
    let mut events: Vec<&str> = repair
        .stale_statuses
        .iter()
        .map(String::as_str)
        .chain(
            repair
                .missing_deliveries
                .iter()
                .map(|m| m.inbox_id.as_str()),
        )
        .collect();
    events.sort_unstable();
    events.dedup();
    if !events.is_empty() {
        let lock = tx
            .prepare_cached("SELECT id FROM inbox WHERE id = ANY($1) ORDER BY id FOR UPDATE")
            .await?;
        tx.query(&lock, &[&events]).await?;
    }
    let add = tx
        .prepare_cached(
            "WITH added AS (
                 INSERT INTO delivery (inbox_id, endpoint_id, target, generation, status, attempts,
                                       next_attempt_at_ms, ordering_key, object_version, created_at_ms)
                 SELECT i.id, i.endpoint_id, $2,
                        coalesce((SELECT max(generation) FROM delivery WHERE inbox_id = i.id), 0),
                        'PENDING', 0, $3,
                        CASE WHEN i.object_id IS NOT NULL AND i.object_version IS NOT NULL THEN i.object_id END,
                        CASE WHEN i.object_id IS NOT NULL AND i.object_version IS NOT NULL THEN i.object_version END,
                        $3
                 FROM inbox i
                 WHERE i.id = $1
                   AND EXISTS (SELECT 1 FROM json_array_elements_text(i.targets::json) AS t(target)
                               WHERE t.target = $2)
                   AND NOT EXISTS (SELECT 1 FROM delivery d WHERE d.inbox_id = i.id AND d.target = $2)
                 RETURNING inbox_id
             )
             UPDATE inbox SET status = 'ACCEPTED'
             WHERE id IN (SELECT inbox_id FROM added)
             RETURNING id",
        )
        .await?;
    for missing in &repair.missing_deliveries {
        let reopened: Vec<String> = first_column(
            tx,
            &add,
            &[&missing.inbox_id, &missing.target, &repair.now_ms],
        )
        .await?;
        repaired.missing_deliveries += reopened.len() as u64;
    }
    if !repair.stale_statuses.is_empty() {
        let finish = tx
            .prepare_cached(
                "UPDATE inbox i SET status = CASE WHEN EXISTS (
                        SELECT 1 FROM delivery d WHERE d.inbox_id = i.id AND d.status = 'DEAD'
                          AND d.generation = (SELECT max(generation) FROM delivery WHERE inbox_id = i.id))
                     THEN 'FAILED' ELSE 'PROCESSED' END
                 WHERE i.id = ANY($1) AND i.status = 'ACCEPTED'
                   AND NOT EXISTS (SELECT 1 FROM delivery d
                                   WHERE d.inbox_id = i.id AND d.status IN ('PENDING', 'LEASED'))
                   AND (EXISTS (SELECT 1 FROM delivery d WHERE d.inbox_id = i.id)
                        OR i.targets IS NULL OR i.targets = '[]')",
            )
            .await?;
        repaired.stale_statuses = tx.execute(&finish, &[&repair.stale_statuses]).await?;
    }
    if !repair.expired_leases.is_empty() {
        let reclaim = tx
            .prepare_cached(
                "UPDATE delivery SET status = 'PENDING', lease_owner = NULL, lease_until_ms = NULL
                 WHERE id = ANY($1) AND status = 'LEASED' AND lease_until_ms < $2",
            )
            .await?;
        repaired.expired_leases = tx
            .execute(
                &reclaim,
                &[&repair.expired_leases, &repair.expired_before_ms],
            )
            .await?;
    }
    Ok(repaired)
}
