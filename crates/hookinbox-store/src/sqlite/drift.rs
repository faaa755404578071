//! Internal drift on SQLite (see [`crate::drift`]): found on the reader's
//! connection, so a search through a day of events never holds up the
//! writer; repaired in one op of the group commit, each statement guarded
//! by the condition the row was found in.

use rusqlite::{params, Connection};

use super::reader::SqliteReader;
use crate::drift::uuid_v7_floor;
use crate::{Drift, DriftQuery, DriftRepair, MissingDelivery, Repaired, StoreError};

/// Leases past expiry, through the partial index `delivery_leased`.
const EXPIRED_LEASES: &str = "
    SELECT id FROM delivery
    WHERE status = 'LEASED' AND lease_until_ms < ?1
    ORDER BY lease_until_ms LIMIT ?2";

/// ACCEPTED events with nothing open: through `inbox_status_received`, so
/// it reads the ACCEPTED rows (the backlog), not the inbox.
const STALE_STATUSES: &str = "
    SELECT i.id FROM inbox i
    WHERE i.status = 'ACCEPTED'
      AND NOT EXISTS (SELECT 1 FROM delivery d
                      WHERE d.inbox_id = i.id AND d.status IN ('PENDING', 'LEASED'))
      AND (EXISTS (SELECT 1 FROM delivery d WHERE d.inbox_id = i.id)
           OR i.targets IS NULL OR i.targets = '[]')
    ORDER BY i.received_at_ms LIMIT ?1";

/// Targets recorded with an event that have no delivery row, for events
/// accepted since the floor id (the primary key's range).
const MISSING_DELIVERIES: &str = "
    SELECT i.id, i.endpoint_id, t.value FROM inbox i, json_each(i.targets) t
    WHERE i.id >= ?1 AND i.targets IS NOT NULL AND i.targets <> '[]'
      AND NOT EXISTS (SELECT 1 FROM delivery d WHERE d.inbox_id = i.id AND d.target = t.value)
    ORDER BY i.id, t.value LIMIT ?2";

impl SqliteReader {
    pub(crate) fn find_drift(&self, query: &DriftQuery) -> Result<Drift, StoreError> {
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        self.with_conn(|conn| {
            let expired_leases = conn
                .prepare_cached(EXPIRED_LEASES)?
                .query_map(params![query.expired_before_ms, limit], |row| row.get(0))?
                .collect::<Result<_, _>>()?;
            let stale_statuses = conn
                .prepare_cached(STALE_STATUSES)?
                .query_map(params![limit], |row| row.get(0))?
                .collect::<Result<_, _>>()?;
            let missing_deliveries = conn
                .prepare_cached(MISSING_DELIVERIES)?
                .query_map(
                    params![uuid_v7_floor(query.accepted_since_ms), limit],
                    |row| {
                        Ok(MissingDelivery {
                            inbox_id: row.get(0)?,
                            endpoint_id: row.get(1)?,
                            target: row.get(2)?,
                        })
                    },
                )?
                .collect::<Result<_, _>>()?;
            Ok(Drift {
                expired_leases,
                stale_statuses,
                missing_deliveries,
            })
        })
    }
}

/// Applies `repair` inside the writer's transaction: missing deliveries
/// first (an event that lacked all of them is then open again, not
/// stale), then statuses, then leases.
pub(crate) fn repair(conn: &Connection, repair: &DriftRepair) -> Result<Repaired, rusqlite::Error> {
    let mut repaired = Repaired::default();
    let mut add = conn.prepare_cached(
        "INSERT INTO delivery (inbox_id, endpoint_id, target, generation, status, attempts,
                               next_attempt_at_ms, ordering_key, object_version, created_at_ms)
         SELECT i.id, i.endpoint_id, ?2,
                coalesce((SELECT max(generation) FROM delivery WHERE inbox_id = i.id), 0),
                'PENDING', 0, ?3,
                CASE WHEN i.object_id IS NOT NULL AND i.object_version IS NOT NULL THEN i.object_id END,
                CASE WHEN i.object_id IS NOT NULL AND i.object_version IS NOT NULL THEN i.object_version END,
                ?3
         FROM inbox i
         WHERE i.id = ?1
           AND EXISTS (SELECT 1 FROM json_each(i.targets) t WHERE t.value = ?2)
           AND NOT EXISTS (SELECT 1 FROM delivery d WHERE d.inbox_id = i.id AND d.target = ?2)",
    )?;
    let mut reopen = conn.prepare_cached(
        "UPDATE inbox SET status = 'ACCEPTED' WHERE id = ?1 AND status <> 'ACCEPTED'",
    )?;
    for missing in &repair.missing_deliveries {
        if add.execute(params![missing.inbox_id, missing.target, repair.now_ms])? == 1 {
            reopen.execute(params![missing.inbox_id])?;
            repaired.missing_deliveries += 1;
        }
    }
    let mut finish = conn.prepare_cached(
        "UPDATE inbox SET status = CASE WHEN EXISTS (
                SELECT 1 FROM delivery WHERE inbox_id = ?1 AND status = 'DEAD'
                  AND generation = (SELECT max(generation) FROM delivery WHERE inbox_id = ?1))
             THEN 'FAILED' ELSE 'PROCESSED' END
         WHERE id = ?1 AND status = 'ACCEPTED'
           AND NOT EXISTS (SELECT 1 FROM delivery WHERE inbox_id = ?1 AND status IN ('PENDING', 'LEASED'))
           AND (EXISTS (SELECT 1 FROM delivery WHERE inbox_id = ?1)
                OR targets IS NULL OR targets = '[]')",
    )?;
    for inbox_id in &repair.stale_statuses {
        repaired.stale_statuses += finish.execute(params![inbox_id])? as u64;
    }
    let mut reclaim = conn.prepare_cached(
        "UPDATE delivery SET status = 'PENDING', lease_owner = NULL, lease_until_ms = NULL
         WHERE id = ?1 AND status = 'LEASED' AND lease_until_ms < ?2",
    )?;
    for delivery_id in &repair.expired_leases {
        repaired.expired_leases +=
            reclaim.execute(params![delivery_id, repair.expired_before_ms])? as u64;
    }
    Ok(repaired)
}
