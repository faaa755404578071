//! The outbox state machine on PostgreSQL, for many worker processes at
//! once: leasing with `FOR UPDATE SKIP LOCKED`, per-object ordering that
//! holds across processes, guarded settlements, reclaiming and replay.
//!
//! Per-object ordering. A lease statement decides on its snapshot, and two
//! workers' snapshots can each miss what the other is doing: worker A sees
//! version 2 as the lowest pending version of an object while version 1
//! commits, and worker B, a moment later, sees version 1 as free — two
//! versions in flight, out of order. So an ordered candidate is only leased
//! under a transaction-scoped advisory lock on its (endpoint, target,
//! object), taken with `pg_try_advisory_xact_lock` (a busy object is
//! skipped, like a locked row), and re-checked by a statement that starts
//! after the lock was granted: it sees every lease, settlement and stale
//! skip another worker committed for that object, and nobody else can
//! decide for the object until this transaction commits its LEASED row,
//! which later deciders then see. A partial unique index
//! (`delivery_one_in_flight_per_object`) states the invariant in the schema.
//!
//! Inbox status. Settling one delivery may finish its event (PROCESSED or
//! FAILED) only when no other delivery of it is pending or in flight; two
//! workers settling the event's two deliveries at once would each see the
//! other's as still LEASED, and the event would stay ACCEPTED for ever. So
//! whoever settles locks the inbox rows first (`FOR UPDATE`, sorted) and
//! checks in a statement that starts after the lock: the second settler
//! sees the first one's settlement.
//!
//! Rows by id, not by state. A statement that moves rows it names by id
//! compares their status as `status || '' = …`, never `status = …`: the
//! partial indexes on a state (`delivery_due`, `delivery_leased`,
//! `delivery_dead`) keep an entry for every row that passed through it
//! until VACUUM, and the statistics count only the live rows, so the
//! planner takes such an index for a handful of rows and walks every
//! settled row's entry instead of looking the ids up in the primary key
//! (a settlement of 64 leases behind 5,000 settled ones took 240 ms on the
//! generic plan instead of 0.2 ms). The expression is no index's
//! predicate, so the primary key (or `inbox_id`'s) is the only way in.
//! The same holds for `inbox_status_received` and an inbox row's status.
//!
//! Unflushed commits. A lease, and a settlement, that writes only unordered
//! deliveries commits with `synchronous_commit = off`: COMMIT returns once
//! its WAL is written, and the WAL writer flushes it within
//! `wal_writer_delay` (×3 at most). Only a crash of the PostgreSQL server
//! (or its machine) inside that window can lose such a commit, never
//! corrupt anything, and PostgreSQL flushes WAL in order, so every
//! commit flushed after it (an ordered settlement, an accept) takes it
//! along. What losing one means is what a worker crash already means,
//! which delivery is at-least-once for (docs/architecture.md §5): a lost lease is a
//! PENDING row again, taken again, and a lost settlement is a lease that
//! expires and is reclaimed — either way the delivery may go out once
//! more, under the same idempotency key; its attempt row and its event's
//! PROCESSED/FAILED are lost with it and written again by the next
//! settlement. The retry budget can grant an attempt more (the attempts
//! count of the lost settlement); its age bound still holds. A handler
//! target's DELIVERED commits with its business change, in its own
//! transaction, flushed (`handler`). Ordered rows stay flushed: an object's
//! next version is leased, and `object_version` moved, on the strength of
//! its previous settlement, and SKIPPED_STALE is decided from it, so a lease
//! or settlement that writes an ordered row (leased, skipped stale, settled)
//! waits for its flush. An accept is never unflushed: a 2xx follows the
//! flush of its event (`accept`). With this, a drain no longer waits for one
//! WAL flush per lease and per settlement.

use std::collections::HashMap;

use deadpool_postgres::{GenericClient, Transaction};

use super::advisory_lock::{lock_key, LockPurpose};
use super::db_error::PgError;
use super::first_column::first_column;
use super::listen::NOTIFY;
use super::reader::stored_event_columns;
use super::target_gates;
use crate::{LeaseParams, LeasedDelivery, ReplayRoute, ReplaySelector, SettleRequest, Settlement};

/// Due, pending deliveries of one target that may go now, by the snapshot:
/// unordered ones, and for an ordered object only the lowest pending
/// version while no other delivery of it is in flight. Rows another worker
/// is leasing right now are skipped. None of a paused target: the pause
/// test does not depend on `d`, so it is planned as a one-time filter
/// and a paused target's rows are not read at all.
pub(super) const SELECT_DUE: &str = "
    SELECT d.id, d.inbox_id, d.attempts, d.created_at_ms, d.ordering_key, d.object_version
    FROM delivery d
    WHERE d.endpoint_id = $1 AND d.target = $2 AND d.status = 'PENDING' AND d.next_attempt_at_ms <= $3
      AND NOT EXISTS (SELECT 1 FROM target_gate g
                      WHERE g.endpoint_id = $1 AND g.target = $2 AND g.paused_at_ms IS NOT NULL)
      AND (d.ordering_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM delivery o
            WHERE o.endpoint_id = d.endpoint_id AND o.target = d.target
              AND o.ordering_key = d.ordering_key AND o.id <> d.id
              AND (o.status = 'LEASED'
                   OR (o.status = 'PENDING'
                       AND (o.object_version < d.object_version
                            OR (o.object_version = d.object_version AND o.id < d.id))))))
    ORDER BY d.next_attempt_at_ms, d.id
    LIMIT $4
    FOR UPDATE OF d SKIP LOCKED";

/// The ordered candidates again, on a fresh snapshot taken under their
/// objects' advisory locks: still free to go, and the last version
/// delivered for the object.
const RECHECK_ORDERED: &str = "
    SELECT d.id,
           d.status = 'PENDING' AND NOT EXISTS (
               SELECT 1 FROM delivery o
               WHERE o.endpoint_id = d.endpoint_id AND o.target = d.target
                 AND o.ordering_key = d.ordering_key AND o.id <> d.id
                 AND (o.status = 'LEASED'
                      OR (o.status = 'PENDING'
                          AND (o.object_version < d.object_version
                               OR (o.object_version = d.object_version AND o.id < d.id))))),
           v.last_version
    FROM delivery d
    LEFT JOIN object_version v
           ON v.endpoint_id = d.endpoint_id AND v.target = d.target AND v.object_id = d.ordering_key
    WHERE d.id = ANY($1)";

/// Leases the chosen candidates and reads their events in the same
/// statement (the worker needs each one's event next): the event columns
/// of [`stored_event_columns`], then the delivery id. LEFT JOINs, so a
/// leased delivery whose inbox row is gone still comes back (its attempt
/// then fails as "missing").
pub(super) const LEASE_WITH_EVENTS: &str = concat!(
    "WITH leased AS (
         UPDATE delivery SET status = 'LEASED', lease_owner = $2, lease_until_ms = $3
         WHERE id = ANY($1) AND status || '' = 'PENDING'
         RETURNING id, inbox_id
     )
     SELECT ",
    stored_event_columns!(),
    ", l.id
     FROM leased l
     LEFT JOIN inbox i ON i.id = l.inbox_id
     LEFT JOIN inbox_payload p ON p.inbox_id = l.inbox_id"
);

/// Where [`LEASE_WITH_EVENTS`] puts the delivery id.
const LEASED_ID_COLUMN: usize = 16;

/// A delivery [`lease`] took, with its event's columns as read in the
/// leasing statement (see `PostgresReader::event_from_joined_row`).
pub(crate) struct Leased {
    pub(crate) lease: LeasedDelivery,
    pub(crate) event_row: tokio_postgres::Row,
}

/// One row of [`SELECT_DUE`].
struct DueRow {
    delivery_id: i64,
    inbox_id: String,
    attempts: i64,
    created_at_ms: i64,
    ordering_key: Option<String>,
    object_version: Option<i64>,
}

impl DueRow {
    fn from_row(row: &tokio_postgres::Row) -> Result<DueRow, tokio_postgres::Error> {
        Ok(DueRow {
            delivery_id: row.try_get(0)?,
            inbox_id: row.try_get(1)?,
            attempts: row.try_get(2)?,
            created_at_ms: row.try_get(3)?,
            ordering_key: row.try_get(4)?,
            object_version: row.try_get(5)?,
        })
    }
}

/// Leases up to `params.max` due deliveries, as many as the target's gate
/// admits (none while it is paused or its circuit open, no more than its
/// tokens; `crate::target_gate`), and writes what the lease took from the
/// gate in the same transaction. Ordered deliveries whose version is not
/// newer than the last one delivered are settled as SKIPPED_STALE on the
/// way and not returned.
pub(crate) async fn lease(
    tx: &Transaction<'_>,
    schema: &str,
    params: &LeaseParams,
) -> Result<Vec<Leased>, PgError> {
    let wanted = i64::try_from(params.max).unwrap_or(i64::MAX);
    // The gate, the first look for due rows and the commit's durability
    // (unflushed unless an ordered row is written, module doc) in one round
    // trip: the look is wasted (its row locks released at once) when the
    // gate admits nothing, which costs less than a round trip more per lease.
    let (gate, mut candidates, ()) = tokio::try_join!(
        target_gates::read_for_lease(tx, &params.endpoint_id, &params.target, &params.gate),
        select_due(tx, params, wanted),
        set_commit_durability(tx, CommitDurability::Unflushed)
    )?;
    let admission = gate.admit(&params.gate, params.max, params.now_ms, params.lease_ms);
    if admission.max == 0 {
        return Ok(Vec::new());
    }
    candidates.truncate(admission.max);
    let leased = lease_candidates(tx, schema, params, admission.max, candidates).await?;
    if let Some((state, transition)) = admission.settle(leased.len()) {
        target_gates::write(tx, &params.endpoint_id, &params.target, &state).await?;
        if let Some(transition) = transition {
            transition.log(&params.endpoint_id, &params.target);
        }
    }
    Ok(leased)
}

/// Leases up to `max` deliveries, starting from the first look's
/// `candidates` (see [`lease`]).
async fn lease_candidates(
    tx: &Transaction<'_>,
    schema: &str,
    params: &LeaseParams,
    max: usize,
    first_candidates: Vec<DueRow>,
) -> Result<Vec<Leased>, PgError> {
    let mut leased = Vec::new();
    let lease_until_ms = params.now_ms + params.lease_ms;
    // Stale skips free the object for its next version, so look again until
    // a round skips nothing (bounded: each round settles at least one row).
    let mut first_candidates = Some(first_candidates);
    let mut flushed = false;
    loop {
        let wanted = i64::try_from(max - leased.len()).unwrap_or(i64::MAX);
        let candidates = match first_candidates.take() {
            Some(candidates) => candidates,
            None => select_due(tx, params, wanted).await?,
        };
        if candidates.is_empty() {
            return Ok(leased);
        }
        let ordered_ids = lock_ordered_candidates(tx, schema, params, &candidates).await?;
        let mut to_lease = Vec::new();
        let mut stale = Vec::new();
        // Only these candidates may be leased or skipped as ordered rows.
        let rechecked = if ordered_ids.is_empty() || flushed {
            recheck_ordered(tx, &ordered_ids).await?
        } else {
            flushed = true;
            let (rechecked, ()) = tokio::try_join!(
                recheck_ordered(tx, &ordered_ids),
                set_commit_durability(tx, CommitDurability::Flushed)
            )?;
            rechecked
        };
        for candidate in &candidates {
            let Some(version) = candidate
                .object_version
                .filter(|_| candidate.ordering_key.is_some())
            else {
                to_lease.push(candidate.delivery_id);
                continue;
            };
            match rechecked.get(&candidate.delivery_id) {
                Some((true, last)) if last.is_some_and(|last| version <= last) => {
                    stale.push(candidate.delivery_id);
                }
                Some((true, _)) => to_lease.push(candidate.delivery_id),
                // Not free any more, or another worker is deciding for it.
                Some((false, _)) | None => {}
            }
        }

        if !to_lease.is_empty() {
            let statement = tx.prepare_cached(LEASE_WITH_EVENTS).await?;
            let mut changed: HashMap<i64, tokio_postgres::Row> = tx
                .query(&statement, &[&to_lease, &params.owner, &lease_until_ms])
                .await?
                .into_iter()
                .map(|row| Ok((row.try_get(LEASED_ID_COLUMN)?, row)))
                .collect::<Result<_, tokio_postgres::Error>>()?;
            // In the candidates' order (due time, then id), as SQLite does.
            for candidate in &candidates {
                let Some(event_row) = changed.remove(&candidate.delivery_id) else {
                    continue;
                };
                leased.push(Leased {
                    lease: LeasedDelivery {
                        delivery_id: candidate.delivery_id,
                        inbox_id: candidate.inbox_id.clone(),
                        endpoint_id: params.endpoint_id.clone(),
                        target: params.target.clone(),
                        owner: params.owner.clone(),
                        attempts: u32::try_from(candidate.attempts).unwrap_or(u32::MAX),
                        created_at_ms: candidate.created_at_ms,
                        lease_until_ms,
                        ordered: candidate.ordering_key.is_some(),
                    },
                    event_row,
                });
            }
        }

        if stale.is_empty() || leased.len() >= max {
            return Ok(leased);
        }
        let statement = tx
            .prepare_cached(
                "UPDATE delivery SET status = 'SKIPPED_STALE', last_error = 'stale: a newer version was delivered'
                 WHERE id = ANY($1) AND status || '' = 'PENDING'
                 RETURNING inbox_id",
            )
            .await?;
        let inbox_ids: Vec<String> = first_column(tx, &statement, &[&stale]).await?;
        finish_inboxes(tx, inbox_ids).await?;
    }
}

/// [`SELECT_DUE`]: up to `wanted` candidates, locked.
async fn select_due(
    tx: &Transaction<'_>,
    params: &LeaseParams,
    wanted: i64,
) -> Result<Vec<DueRow>, PgError> {
    let statement = tx.prepare_cached(SELECT_DUE).await?;
    Ok(tx
        .query(
            &statement,
            &[&params.endpoint_id, &params.target, &params.now_ms, &wanted],
        )
        .await?
        .iter()
        .map(DueRow::from_row)
        .collect::<Result<_, _>>()?)
}

/// Whether a transaction's COMMIT waits until its WAL is flushed (see the
/// module doc, "Unflushed commits").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommitDurability {
    /// `synchronous_commit = on`, every connection's setting (`pool`).
    Flushed,
    /// `synchronous_commit = off` for this transaction only.
    Unflushed,
}

/// Sets how this transaction's COMMIT waits (`SET LOCAL`, as a function so
/// it can be a prepared statement sent beside another one).
pub(crate) async fn set_commit_durability(
    tx: &Transaction<'_>,
    durability: CommitDurability,
) -> Result<(), PgError> {
    let setting = match durability {
        CommitDurability::Flushed => "on",
        CommitDurability::Unflushed => "off",
    };
    let statement = tx
        .prepare_cached("SELECT set_config('synchronous_commit', $1, true)")
        .await?;
    tx.query_one(&statement, &[&setting]).await?;
    Ok(())
}

/// Takes the advisory lock of each ordered candidate's object, without
/// waiting; returns the candidates whose object this transaction now holds.
async fn lock_ordered_candidates(
    tx: &Transaction<'_>,
    schema: &str,
    params: &LeaseParams,
    candidates: &[DueRow],
) -> Result<Vec<i64>, PgError> {
    let mut by_key: Vec<(i64, i64)> = candidates
        .iter()
        .filter_map(|candidate| {
            let object_id = candidate.ordering_key.as_deref()?;
            candidate.object_version?;
            let key = lock_key(
                schema,
                LockPurpose::Ordering,
                &[
                    params.endpoint_id.as_bytes(),
                    params.target.as_bytes(),
                    object_id.as_bytes(),
                ],
            );
            Some((key, candidate.delivery_id))
        })
        .collect();
    if by_key.is_empty() {
        return Ok(Vec::new());
    }
    by_key.sort_unstable();
    let mut keys: Vec<i64> = by_key.iter().map(|(key, _)| *key).collect();
    keys.dedup();
    let statement = tx
        .prepare_cached("SELECT k FROM unnest($1::int8[]) AS k WHERE pg_try_advisory_xact_lock(k)")
        .await?;
    let held: Vec<i64> = first_column(tx, &statement, &[&keys]).await?;
    Ok(by_key
        .into_iter()
        .filter(|(key, _)| held.contains(key))
        .map(|(_, delivery_id)| delivery_id)
        .collect())
}

/// Delivery id → (still free to go, last delivered version of its object).
async fn recheck_ordered(
    tx: &Transaction<'_>,
    ids: &[i64],
) -> Result<HashMap<i64, (bool, Option<i64>)>, PgError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let statement = tx.prepare_cached(RECHECK_ORDERED).await?;
    Ok(tx
        .query(&statement, &[&ids])
        .await?
        .iter()
        .map(|row| Ok((row.try_get(0)?, (row.try_get(1)?, row.try_get(2)?))))
        .collect::<Result<_, tokio_postgres::Error>>()?)
}

/// Extends a lease; `false` when the lease is no longer this owner's.
pub(crate) async fn heartbeat(
    client: &impl GenericClient,
    lease: &LeasedDelivery,
    until_ms: i64,
) -> Result<bool, PgError> {
    let statement = client
        .prepare_cached(
            "UPDATE delivery SET lease_until_ms = $3
             WHERE id = $1 AND status || '' = 'LEASED' AND lease_owner = $2",
        )
        .await?;
    let changed = client
        .execute(&statement, &[&lease.delivery_id, &lease.owner, &until_ms])
        .await?;
    Ok(changed == 1)
}

/// Records attempts' outcomes, each guarded by its own lease, with their
/// attempt rows and the objects' last delivered versions — one statement —
/// then finishes the events that are done. One answer per request: `false`
/// where the lease was lost (nothing changed for it).
pub(super) const SETTLE: &str = "
    WITH request AS (
        SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::int8[], $5::text[], $6::int8[], $7::int8[])
        AS r(id, owner, status, next_attempt_at_ms, error, delivered_at_ms, now_ms)
    ), settled AS (
        UPDATE delivery d
        SET status = r.status, attempts = d.attempts + 1, next_attempt_at_ms = r.next_attempt_at_ms,
            last_error = coalesce(r.error, d.last_error), delivered_at_ms = r.delivered_at_ms,
            lease_owner = NULL, lease_until_ms = NULL
        FROM request r
        WHERE d.id = r.id AND d.status || '' = 'LEASED' AND d.lease_owner = r.owner
        RETURNING d.id, d.attempts, d.status, d.endpoint_id, d.target, d.ordering_key,
                  d.object_version, r.now_ms, r.error
    ), attempt AS (
        INSERT INTO delivery_attempt (delivery_id, attempt, finished_at_ms, outcome, error)
        SELECT id, attempts, now_ms, status, error FROM settled
    ), version AS (
        INSERT INTO object_version (endpoint_id, target, object_id, last_version)
        SELECT endpoint_id, target, ordering_key, max(object_version) FROM settled
        WHERE status = 'DELIVERED' AND ordering_key IS NOT NULL AND object_version IS NOT NULL
        GROUP BY endpoint_id, target, ordering_key
        ON CONFLICT (endpoint_id, target, object_id)
        DO UPDATE SET last_version = greatest(object_version.last_version, excluded.last_version)
    )
    SELECT id FROM settled";

pub(crate) async fn settle_many(
    tx: &Transaction<'_>,
    requests: &[SettleRequest],
) -> Result<Vec<bool>, PgError> {
    // A delivery named twice is settled by its first request only: the
    // second finds the lease already gone, as it would one after the other.
    let mut first_request: HashMap<i64, usize> = HashMap::new();
    let mut ids = Vec::new();
    let mut owners = Vec::new();
    let mut statuses = Vec::new();
    let mut next_attempts = Vec::new();
    let mut errors = Vec::new();
    let mut delivered_at = Vec::new();
    let mut now = Vec::new();
    let mut deferred = Deferrals::default();
    for (index, request) in requests.iter().enumerate() {
        if first_request.contains_key(&request.lease.delivery_id) {
            continue;
        }
        first_request.insert(request.lease.delivery_id, index);
        let (status, next_attempt_at_ms, error, delivered_at_ms) = match &request.settlement {
            Settlement::Delivered => ("DELIVERED", request.now_ms, None, Some(request.now_ms)),
            Settlement::Retry {
                next_attempt_at_ms,
                error,
            } => ("PENDING", *next_attempt_at_ms, Some(error.as_str()), None),
            Settlement::Dead { error } => ("DEAD", request.now_ms, Some(error.as_str()), None),
            Settlement::Cancelled { note } => (
                "DELIVERED",
                request.now_ms,
                Some(note.as_str()),
                Some(request.now_ms),
            ),
            Settlement::Deferred {
                next_attempt_at_ms,
                error,
            } => {
                deferred.push(&request.lease, *next_attempt_at_ms, error);
                continue;
            }
        };
        ids.push(request.lease.delivery_id);
        owners.push(request.lease.owner.as_str());
        statuses.push(status);
        next_attempts.push(next_attempt_at_ms);
        errors.push(error);
        delivered_at.push(delivered_at_ms);
        now.push(request.now_ms);
    }
    let statement = tx.prepare_cached(SETTLE).await?;
    let settled: Vec<i64> = first_column(
        tx,
        &statement,
        &[
            &ids,
            &owners,
            &statuses,
            &next_attempts,
            &errors,
            &delivered_at,
            &now,
        ],
    )
    .await?;
    let inbox_ids = requests
        .iter()
        .filter(|request| settled.contains(&request.lease.delivery_id))
        .map(|request| request.lease.inbox_id.clone())
        .collect();
    finish_inboxes(tx, inbox_ids).await?;
    // Deferred deliveries stay PENDING: their events are not finished.
    let mut settled = settled;
    settled.extend(deferred.apply(tx).await?);
    Ok(requests
        .iter()
        .enumerate()
        .map(|(index, request)| {
            first_request.get(&request.lease.delivery_id) == Some(&index)
                && settled.contains(&request.lease.delivery_id)
        })
        .collect())
}

/// Leased deliveries given back without counting an attempt (see
/// `Settlement::Deferred`): `$1` ids, `$2` lease owners, `$3` when each is
/// due again, `$4` what failed. Returns the ids whose lease still held.
pub(super) const DEFER: &str = "
    UPDATE delivery d
    SET status = 'PENDING', next_attempt_at_ms = r.next_attempt_at_ms, last_error = r.error,
        lease_owner = NULL, lease_until_ms = NULL
    FROM unnest($1::int8[], $2::text[], $3::int8[], $4::text[])
         AS r(id, owner, next_attempt_at_ms, error)
    WHERE d.id = r.id AND d.status || '' = 'LEASED' AND d.lease_owner = r.owner
    RETURNING d.id";

/// The deferred settlements of one `settle_many`, as [`DEFER`]'s arrays.
#[derive(Default)]
struct Deferrals<'a> {
    ids: Vec<i64>,
    owners: Vec<&'a str>,
    next_attempts: Vec<i64>,
    errors: Vec<&'a str>,
}

impl<'a> Deferrals<'a> {
    fn push(&mut self, lease: &'a LeasedDelivery, next_attempt_at_ms: i64, error: &'a str) {
        self.ids.push(lease.delivery_id);
        self.owners.push(lease.owner.as_str());
        self.next_attempts.push(next_attempt_at_ms);
        self.errors.push(error);
    }

    /// Defers them all in one statement; the ids whose lease still held.
    async fn apply(&self, tx: &Transaction<'_>) -> Result<Vec<i64>, PgError> {
        if self.ids.is_empty() {
            return Ok(Vec::new());
        }
        let statement = tx.prepare_cached(DEFER).await?;
        first_column(
            tx,
            &statement,
            &[&self.ids, &self.owners, &self.next_attempts, &self.errors],
        )
        .await
    }
}

/// The inbox rows of `$1` that are done, PROCESSED or FAILED (see
/// [`finish_inboxes`]).
pub(super) const FINISH_INBOXES: &str = "UPDATE inbox i SET status = CASE WHEN EXISTS (
                    SELECT 1 FROM delivery d WHERE d.inbox_id = i.id AND d.status || '' = 'DEAD'
                      AND d.generation = (SELECT max(generation) FROM delivery WHERE inbox_id = i.id))
                 THEN 'FAILED' ELSE 'PROCESSED' END
             WHERE i.id = ANY($1) AND i.status || '' = 'ACCEPTED'
               AND NOT EXISTS (SELECT 1 FROM delivery d
                               WHERE d.inbox_id = i.id AND d.status || '' IN ('PENDING', 'LEASED'))";

/// Moves inbox rows to PROCESSED or FAILED once none of their deliveries
/// is pending or in flight; FAILED when the latest generation has a dead
/// one. Locks the rows first (see the module doc).
async fn finish_inboxes(tx: &Transaction<'_>, mut inbox_ids: Vec<String>) -> Result<(), PgError> {
    if inbox_ids.is_empty() {
        return Ok(());
    }
    inbox_ids.sort_unstable();
    inbox_ids.dedup();
    let lock = tx
        .prepare_cached("SELECT id FROM inbox WHERE id = ANY($1) ORDER BY id FOR UPDATE")
        .await?;
    tx.query(&lock, &[&inbox_ids]).await?;
    let finish = tx.prepare_cached(FINISH_INBOXES).await?;
    tx.execute(&finish, &[&inbox_ids]).await?;
    Ok(())
}

/// Returns expired leases to PENDING (their worker crashed or stalled) and,
/// when it did, wakes idle workers with one NOTIFY — one autocommitted
/// statement.
pub(crate) async fn reclaim_expired(
    client: &impl GenericClient,
    notify_channel: &str,
    now_ms: i64,
) -> Result<u64, PgError> {
    let statement = client
        .prepare_cached(
            "WITH reclaimed AS (
                 UPDATE delivery SET status = 'PENDING', lease_owner = NULL, lease_until_ms = NULL
                 WHERE status = 'LEASED' AND lease_until_ms < $1
                 RETURNING 1
             ), counted AS (SELECT count(*) AS n FROM reclaimed)
             SELECT n, CASE WHEN n > 0 THEN pg_notify($2, '') END::text FROM counted",
        )
        .await?;
    let row = client
        .query_one(&statement, &[&now_ms, &notify_channel])
        .await?;
    let reclaimed: i64 = row.try_get(0)?;
    Ok(u64::try_from(reclaimed).unwrap_or(0))
}

/// [`ReplaySelector::Routed`]: for each event with nothing in flight, a new
/// generation of deliveries to the targets routing chose now (ordered by
/// the event's object id and version, as at accept), its routed /
/// not-routed record replaced, and the event ACCEPTED again.
async fn replay_routed(
    tx: &Transaction<'_>,
    notify_channel: &str,
    routes: &[ReplayRoute],
    now_ms: i64,
) -> Result<Vec<String>, PgError> {
    let mut ids: Vec<&str> = routes
        .iter()
        .filter(|route| !route.deliver_to.is_empty())
        .map(|route| route.inbox_id.as_str())
        .collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    ids.sort_unstable();
    ids.dedup();
    // As in `replay`: the events' rows locked first, in one order.
    let lock = tx
        .prepare_cached("SELECT id FROM inbox WHERE id = ANY($1) ORDER BY id FOR UPDATE")
        .await?;
    tx.query(&lock, &[&ids]).await?;
    let idle = tx
        .prepare_cached(
            "SELECT coalesce(max(generation), -1) + 1,
                    count(*) FILTER (WHERE status IN ('PENDING', 'LEASED'))
             FROM delivery WHERE inbox_id = $1",
        )
        .await?;
    let insert = tx
        .prepare_cached(
            "INSERT INTO delivery (inbox_id, endpoint_id, target, generation, status, attempts,
                                   next_attempt_at_ms, ordering_key, object_version, created_at_ms)
             SELECT i.id, i.endpoint_id, t.target, $2, 'PENDING', 0, $4,
                    CASE WHEN i.object_version IS NOT NULL THEN i.object_id END,
                    CASE WHEN i.object_id IS NOT NULL THEN i.object_version END, $4
             FROM inbox i, unnest($3::text[]) AS t(target)
             WHERE i.id = $1",
        )
        .await?;
    let record = tx
        .prepare_cached(
            "UPDATE inbox SET status = 'ACCEPTED', targets = $2, not_routed = $3 WHERE id = $1",
        )
        .await?;
    let mut replayed = Vec::new();
    for route in routes.iter().filter(|route| !route.deliver_to.is_empty()) {
        let row = tx.query_one(&idle, &[&route.inbox_id]).await?;
        let generation: i64 = row.try_get(0)?;
        let in_flight: i64 = row.try_get(1)?;
        if in_flight > 0 {
            continue;
        }
        let added = tx
            .execute(
                &insert,
                &[&route.inbox_id, &generation, &route.deliver_to, &now_ms],
            )
            .await?;
        if added == 0 {
            continue;
        }
        tx.execute(
            &record,
            &[
                &route.inbox_id,
                &route.routed_to_column(),
                &route.not_routed_column(),
            ],
        )
        .await?;
        replayed.push(route.inbox_id.clone());
    }
    replayed.sort_unstable();
    if !replayed.is_empty() {
        let notify = tx.prepare_cached(NOTIFY).await?;
        tx.execute(&notify, &[&notify_channel]).await?;
    }
    Ok(replayed)
}

/// Adds a new generation of deliveries (same targets, same inbox id — so the
/// same idempotency key) for each selected event and makes it ACCEPTED
/// again. Events with a delivery still pending or in flight are left alone.
pub(crate) async fn replay(
    tx: &Transaction<'_>,
    notify_channel: &str,
    selector: &ReplaySelector,
    now_ms: i64,
) -> Result<Vec<String>, PgError> {
    let mut ids: Vec<String> = match selector {
        ReplaySelector::Routed { routes } => {
            return replay_routed(tx, notify_channel, routes, now_ms).await
        }
        ReplaySelector::One { inbox_id } => vec![inbox_id.clone()],
        ReplaySelector::Ids { inbox_ids } => inbox_ids.clone(),
        ReplaySelector::Failed { since_ms } => {
            let statement = tx
                .prepare_cached(
                    "SELECT id FROM inbox WHERE status = 'FAILED' AND received_at_ms >= $1 ORDER BY id",
                )
                .await?;
            first_column(tx, &statement, &[&since_ms.unwrap_or(i64::MIN)]).await?
        }
    };
    if ids.is_empty() {
        return Ok(ids);
    }
    ids.sort_unstable();
    ids.dedup();
    // The events' rows locked first: a settlement finishing one of them
    // and this replay reopening it happen one after the other.
    let lock = tx
        .prepare_cached("SELECT id FROM inbox WHERE id = ANY($1) ORDER BY id FOR UPDATE")
        .await?;
    tx.query(&lock, &[&ids]).await?;
    let statement = tx
        .prepare_cached(
            "WITH idle AS (
                 SELECT i.id FROM inbox i
                 WHERE i.id = ANY($1) AND NOT EXISTS (
                     SELECT 1 FROM delivery d WHERE d.inbox_id = i.id AND d.status IN ('PENDING', 'LEASED'))
             ), added AS (
                 INSERT INTO delivery (inbox_id, endpoint_id, target, generation, status, attempts,
                                       next_attempt_at_ms, ordering_key, object_version, created_at_ms)
                 SELECT d.inbox_id, d.endpoint_id, d.target, d.generation + 1, 'PENDING', 0, $2,
                        d.ordering_key, d.object_version, $2
                 FROM delivery d JOIN idle ON idle.id = d.inbox_id
                 WHERE d.generation = (SELECT max(generation) FROM delivery WHERE inbox_id = d.inbox_id)
                 RETURNING inbox_id
             )
             UPDATE inbox SET status = 'ACCEPTED'
             WHERE id IN (SELECT inbox_id FROM added)
             RETURNING id",
        )
        .await?;
    let mut replayed: Vec<String> = first_column(tx, &statement, &[&ids, &now_ms]).await?;
    replayed.sort_unstable();
    if !replayed.is_empty() {
        let notify = tx.prepare_cached(NOTIFY).await?;
        tx.execute(&notify, &[&notify_channel]).await?;
    }
    Ok(replayed)
}
