//! The outbox state machine in SQL: leasing due deliveries (one at a time
//! per ordered object, in version order), heartbeats, settling, reclaiming
//! expired leases and replays. Every transition is a guarded UPDATE; each
//! function runs inside the writer's transaction.

use rusqlite::{params, Connection, OptionalExtension};

use super::target_gates;
use crate::{LeaseParams, LeasedDelivery, ReplayRoute, ReplaySelector, Settlement};

/// Due, pending deliveries of one target that may go now: unordered ones,
/// and for an ordered object only the lowest pending version, and only when
/// no other delivery of that object is in flight.
///
/// No `LIMIT ?`: SQLite lets a bound LIMIT steer the plan, so every new
/// binding of it re-prepares the statement (parse and plan on each lease,
/// about an eighth of a worker's CPU). The caller takes only the rows it
/// needs instead; the scan runs in index order (`delivery_due`), so stepping
/// stops after them.
const SELECT_DUE: &str = "
    SELECT d.id, d.inbox_id, d.attempts, d.created_at_ms, d.ordering_key, d.object_version
    FROM delivery d
    WHERE d.endpoint_id = ?1 AND d.target = ?2 AND d.status = 'PENDING' AND d.next_attempt_at_ms <= ?3
      AND (d.ordering_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM delivery o
            WHERE o.endpoint_id = d.endpoint_id AND o.target = d.target
              AND o.ordering_key = d.ordering_key AND o.id <> d.id
              AND (o.status = 'LEASED'
                   OR (o.status = 'PENDING'
                       AND (o.object_version < d.object_version
                            OR (o.object_version = d.object_version AND o.id < d.id))))))
    ORDER BY d.next_attempt_at_ms, d.id";

/// One row of [`SELECT_DUE`].
struct DueRow {
    delivery_id: i64,
    inbox_id: String,
    attempts: u32,
    created_at_ms: i64,
    ordering_key: Option<String>,
    object_version: Option<i64>,
}

const LAST_DELIVERED_VERSION: &str =
    "SELECT last_version FROM object_version WHERE endpoint_id = ?1 AND target = ?2 AND object_id = ?3";

/// Leases up to `params.max` due deliveries, as many as the target's gate
/// admits (none while it is paused or its circuit open, no more than its
/// tokens; `crate::target_gate`), and writes what the lease took from the
/// gate. Ordered deliveries whose version is not newer than the last one
/// delivered are settled as SKIPPED_STALE on the way and not returned.
pub(crate) fn lease(
    conn: &Connection,
    params: &LeaseParams,
) -> Result<Vec<LeasedDelivery>, rusqlite::Error> {
    let gate = target_gates::read(conn, &params.endpoint_id, &params.target)?;
    let admission = gate.admit(&params.gate, params.max, params.now_ms, params.lease_ms);
    if admission.max == 0 {
        return Ok(Vec::new());
    }
    let leased = lease_up_to(conn, params, admission.max)?;
    if let Some((state, transition)) = admission.settle(leased.len()) {
        target_gates::write(conn, &params.endpoint_id, &params.target, &state)?;
        if let Some(transition) = transition {
            transition.log(&params.endpoint_id, &params.target);
        }
    }
    Ok(leased)
}

/// Leases up to `max` due deliveries (see [`lease`]).
fn lease_up_to(
    conn: &Connection,
    params: &LeaseParams,
    max: usize,
) -> Result<Vec<LeasedDelivery>, rusqlite::Error> {
    let mut leased = Vec::new();
    // Stale skips free the object for its next version, so look again until
    // a round skips nothing (bounded: each round settles at least one row).
    loop {
        let candidates: Vec<DueRow> = conn
            .prepare_cached(SELECT_DUE)?
            .query_map(
                params![params.endpoint_id, params.target, params.now_ms],
                |row| {
                    Ok(DueRow {
                        delivery_id: row.get(0)?,
                        inbox_id: row.get(1)?,
                        attempts: row.get(2)?,
                        created_at_ms: row.get(3)?,
                        ordering_key: row.get(4)?,
                        object_version: row.get(5)?,
                    })
                },
            )?
            .take(max - leased.len())
            .collect::<Result<_, _>>()?;
        let mut skipped = false;
        for DueRow {
            delivery_id,
            inbox_id,
            attempts,
            created_at_ms,
            ordering_key,
            object_version,
        } in candidates
        {
            if let (Some(object_id), Some(version)) = (&ordering_key, object_version) {
                let last: Option<i64> = conn
                    .prepare_cached(LAST_DELIVERED_VERSION)?
                    .query_row(
                        params![params.endpoint_id, params.target, object_id],
                        |row| row.get(0),
                    )
                    .optional()?;
                if last.is_some_and(|last| version <= last) {
                    conn.prepare_cached(
                        "UPDATE delivery SET status = 'SKIPPED_STALE', last_error = 'stale: a newer version was delivered'
                         WHERE id = ?1 AND status = 'PENDING'",
                    )?
                    .execute(params![delivery_id])?;
                    finish_inbox(conn, &inbox_id)?;
                    skipped = true;
                    continue;
                }
            }
            let lease_until_ms = params.now_ms + params.lease_ms;
            let changed = conn
                .prepare_cached(
                    "UPDATE delivery SET status = 'LEASED', lease_owner = ?2, lease_until_ms = ?3
                     WHERE id = ?1 AND status = 'PENDING'",
                )?
                .execute(params![delivery_id, params.owner, lease_until_ms])?;
            if changed == 1 {
                leased.push(LeasedDelivery {
                    delivery_id,
                    inbox_id,
                    endpoint_id: params.endpoint_id.clone(),
                    target: params.target.clone(),
                    owner: params.owner.clone(),
                    attempts,
                    created_at_ms,
                    lease_until_ms,
                    ordered: ordering_key.is_some(),
                });
            }
        }
        if !skipped || leased.len() >= max {
            return Ok(leased);
        }
    }
}

/// Extends a lease; `false` when the lease is no longer this owner's.
pub(crate) fn heartbeat(
    conn: &Connection,
    lease: &LeasedDelivery,
    until_ms: i64,
) -> Result<bool, rusqlite::Error> {
    let changed = conn
        .prepare_cached(
            "UPDATE delivery SET lease_until_ms = ?3 WHERE id = ?1 AND status = 'LEASED' AND lease_owner = ?2",
        )?
        .execute(params![lease.delivery_id, lease.owner, until_ms])?;
    Ok(changed == 1)
}

/// Records the outcome of an attempt; `false` when the lease was lost (the
/// row was reclaimed and may be with another worker), in which case nothing
/// changes.
pub(crate) fn settle(
    conn: &Connection,
    lease: &LeasedDelivery,
    settlement: &Settlement,
    now_ms: i64,
) -> Result<bool, rusqlite::Error> {
    let (status, next_attempt_at_ms, error, delivered_at_ms) = match settlement {
        Settlement::Delivered => ("DELIVERED", now_ms, None, Some(now_ms)),
        Settlement::Retry {
            next_attempt_at_ms,
            error,
        } => ("PENDING", *next_attempt_at_ms, Some(error.as_str()), None),
        Settlement::Dead { error } => ("DEAD", now_ms, Some(error.as_str()), None),
        Settlement::Cancelled { note } => ("DELIVERED", now_ms, Some(note.as_str()), Some(now_ms)),
        Settlement::Deferred {
            next_attempt_at_ms,
            error,
        } => return defer(conn, lease, *next_attempt_at_ms, error),
    };
    let changed = conn
        .prepare_cached(
            "UPDATE delivery
             SET status = ?3, attempts = attempts + 1, next_attempt_at_ms = ?4,
                 last_error = coalesce(?5, last_error), delivered_at_ms = ?6,
                 lease_owner = NULL, lease_until_ms = NULL
             WHERE id = ?1 AND status = 'LEASED' AND lease_owner = ?2",
        )?
        .execute(params![
            lease.delivery_id,
            lease.owner,
            status,
            next_attempt_at_ms,
            error,
            delivered_at_ms
        ])?;
    if changed == 0 {
        return Ok(false);
    }
    conn.prepare_cached(
        "INSERT INTO delivery_attempt (delivery_id, attempt, finished_at_ms, outcome, error)
         SELECT id, attempts, ?2, ?3, ?4 FROM delivery WHERE id = ?1",
    )?
    .execute(params![lease.delivery_id, now_ms, status, error])?;
    if matches!(
        settlement,
        Settlement::Delivered | Settlement::Cancelled { .. }
    ) {
        conn.prepare_cached(
            "INSERT INTO object_version (endpoint_id, target, object_id, last_version)
             SELECT endpoint_id, target, ordering_key, object_version FROM delivery
             WHERE id = ?1 AND ordering_key IS NOT NULL AND object_version IS NOT NULL
             ON CONFLICT (endpoint_id, target, object_id)
             DO UPDATE SET last_version = max(last_version, excluded.last_version)",
        )?
        .execute(params![lease.delivery_id])?;
    }
    finish_inbox(conn, &lease.inbox_id)?;
    Ok(true)
}

/// Gives a leased delivery back, due at `next_attempt_at_ms`, without
/// counting an attempt (see [`Settlement::Deferred`]); `false` when the
/// lease was lost. Still PENDING, so its event stays ACCEPTED.
fn defer(
    conn: &Connection,
    lease: &LeasedDelivery,
    next_attempt_at_ms: i64,
    error: &str,
) -> Result<bool, rusqlite::Error> {
    let changed = conn
        .prepare_cached(
            "UPDATE delivery
             SET status = 'PENDING', next_attempt_at_ms = ?3, last_error = ?4,
                 lease_owner = NULL, lease_until_ms = NULL
             WHERE id = ?1 AND status = 'LEASED' AND lease_owner = ?2",
        )?
        .execute(params![
            lease.delivery_id,
            lease.owner,
            next_attempt_at_ms,
            error
        ])?;
    Ok(changed == 1)
}

/// Moves an inbox row to PROCESSED or FAILED once none of its deliveries is
/// pending or in flight; FAILED when the latest generation has a dead one.
fn finish_inbox(conn: &Connection, inbox_id: &str) -> Result<(), rusqlite::Error> {
    conn.prepare_cached(
        "UPDATE inbox SET status = CASE WHEN EXISTS (
                SELECT 1 FROM delivery WHERE inbox_id = ?1 AND status = 'DEAD'
                  AND generation = (SELECT max(generation) FROM delivery WHERE inbox_id = ?1))
             THEN 'FAILED' ELSE 'PROCESSED' END
         WHERE id = ?1 AND status = 'ACCEPTED'
           AND NOT EXISTS (SELECT 1 FROM delivery WHERE inbox_id = ?1 AND status IN ('PENDING', 'LEASED'))",
    )?
    .execute(params![inbox_id])?;
    Ok(())
}

/// Returns expired leases to PENDING (their worker crashed or stalled).
pub(crate) fn reclaim_expired(conn: &Connection, now_ms: i64) -> Result<u64, rusqlite::Error> {
    let changed = conn
        .prepare_cached(
            "UPDATE delivery SET status = 'PENDING', lease_owner = NULL, lease_until_ms = NULL
             WHERE status = 'LEASED' AND lease_until_ms < ?1",
        )?
        .execute(params![now_ms])?;
    Ok(changed as u64)
}

/// Adds a new generation of deliveries (same targets, same inbox id — so the
/// same idempotency key) for each selected event and makes it ACCEPTED again.
/// Events with a delivery still pending or in flight are left alone.
pub(crate) fn replay(
    conn: &Connection,
    selector: &ReplaySelector,
    now_ms: i64,
) -> Result<Vec<String>, rusqlite::Error> {
    let ids: Vec<String> = match selector {
        ReplaySelector::Routed { routes } => return replay_routed(conn, routes, now_ms),
        ReplaySelector::One { inbox_id } => vec![inbox_id.clone()],
        ReplaySelector::Ids { inbox_ids } => inbox_ids.clone(),
        ReplaySelector::Failed { since_ms } => conn
            .prepare_cached(
                "SELECT id FROM inbox WHERE status = 'FAILED' AND received_at_ms >= ?1 ORDER BY id",
            )?
            .query_map(params![since_ms.unwrap_or(i64::MIN)], |row| row.get(0))?
            .collect::<Result<_, _>>()?,
    };
    let mut replayed = Vec::new();
    for inbox_id in ids {
        if in_flight(conn, &inbox_id)? {
            continue;
        }
        let added = conn
            .prepare_cached(
                "INSERT INTO delivery (inbox_id, endpoint_id, target, generation, status, attempts,
                                       next_attempt_at_ms, ordering_key, object_version, created_at_ms)
                 SELECT inbox_id, endpoint_id, target, generation + 1, 'PENDING', 0, ?2, ordering_key, object_version, ?2
                 FROM delivery
                 WHERE inbox_id = ?1 AND generation = (SELECT max(generation) FROM delivery WHERE inbox_id = ?1)",
            )?
            .execute(params![inbox_id, now_ms])?;
        if added > 0 {
            conn.prepare_cached("UPDATE inbox SET status = 'ACCEPTED' WHERE id = ?1")?
                .execute(params![inbox_id])?;
            replayed.push(inbox_id);
        }
    }
    Ok(replayed)
}

/// Whether the event has a delivery still pending or in flight: a replay
/// leaves it alone.
fn in_flight(conn: &Connection, inbox_id: &str) -> Result<bool, rusqlite::Error> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM delivery WHERE inbox_id = ?1 AND status IN ('PENDING', 'LEASED'))",
    )?
    .query_row(params![inbox_id], |row| row.get(0))
}

/// [`ReplaySelector::Routed`]: a new generation of deliveries to the
/// targets routing chose now (ordered by the event's object id and version,
/// as at accept), the event's routed / not-routed record replaced, and the
/// event ACCEPTED again.
fn replay_routed(
    conn: &Connection,
    routes: &[ReplayRoute],
    now_ms: i64,
) -> Result<Vec<String>, rusqlite::Error> {
    let mut replayed = Vec::new();
    for route in routes {
        if route.deliver_to.is_empty() || in_flight(conn, &route.inbox_id)? {
            continue;
        }
        // One generation for all of them, above every earlier one.
        let generation: i64 = conn
            .prepare_cached(
                "SELECT coalesce(max(generation), -1) + 1 FROM delivery WHERE inbox_id = ?1",
            )?
            .query_row(params![route.inbox_id], |row| row.get(0))?;
        let added_to = {
            let mut insert = conn.prepare_cached(
                "INSERT INTO delivery (inbox_id, endpoint_id, target, generation, status, attempts,
                                       next_attempt_at_ms, ordering_key, object_version, created_at_ms)
                 SELECT i.id, i.endpoint_id, ?2, ?3, 'PENDING', 0, ?4,
                        CASE WHEN i.object_version IS NOT NULL THEN i.object_id END,
                        CASE WHEN i.object_id IS NOT NULL THEN i.object_version END, ?4
                 FROM inbox i WHERE i.id = ?1",
            )?;
            let mut added = 0;
            for target in &route.deliver_to {
                added += insert.execute(params![route.inbox_id, target, generation, now_ms])?;
            }
            added
        };
        if added_to == 0 {
            continue;
        }
        conn.prepare_cached(
            "UPDATE inbox SET status = 'ACCEPTED', targets = ?2, not_routed = ?3 WHERE id = ?1",
        )?
        .execute(params![
            route.inbox_id,
            route.routed_to_column(),
            route.not_routed_column()
        ])?;
        replayed.push(route.inbox_id.clone());
    }
    Ok(replayed)
}
