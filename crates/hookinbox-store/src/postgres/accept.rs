//! Accepting one batch of events: the inbox rows, their bodies and their
//! delivery rows in one statement (`INSERT … SELECT FROM unnest(…) ORDER BY
//! endpoint_id, provider_event_id ON CONFLICT DO NOTHING RETURNING`, which
//! also NOTIFYs the delivery channel when it inserted deliveries), then one
//! more to resolve the events that were not inserted (duplicates and
//! conflicts). A row records its targets; without any it is inserted
//! PROCESSED.
//!
//! Two ways to commit it. The common batch — no event checked by body, no
//! event id twice — is that one INSERT sent on its own, outside a
//! transaction block (`accept_in_one_statement`): PostgreSQL commits it
//! before answering, so the whole batch costs one round trip, and the
//! resolve (only when something was not inserted) reads committed rows
//! after it. Any other batch runs in a transaction (`accept_batch`): the
//! advisory locks, the rounds and their resolves, then the caller's COMMIT.
//!
//! Why the rows are sorted: two batches in two processes that hold some of
//! the same keys take their unique-index entries in the same order, so one
//! waits for the other instead of deadlocking.
//!
//! The outcome of each event is what accepting the batch's events one
//! after the other would give (the SQLite semantics, see
//! `sqlite/accept.rs`): a row with the same (endpoint, event id) makes it a
//! duplicate (same fingerprint) or a conflict; else, for an event whose id
//! is unsigned, a row of the endpoint with the same body fingerprint inside
//! the window makes it a duplicate; else it is inserted. Copies of one
//! event inside a batch (same endpoint, id and body) are sent once and all
//! answered with its row. Events whose identities collide otherwise (one id
//! with two bodies, one unsigned body under two ids) go in successive
//! rounds, so each round holds each identity once.
//!
//! The fingerprint check cannot race across processes: before any insert,
//! the transaction takes an advisory lock per (endpoint, fingerprint) of
//! every event that checks by fingerprint or is stored with unsigned
//! metadata (in sorted order, so these locks never deadlock either). The
//! check-and-insert of one body in one endpoint is then serialised, and a
//! statement that starts after the lock was granted sees the rows the
//! previous holder committed.
//!
//! Before its batch (`PreparedEvent::new`), each event's body is
//! compressed when that makes it smaller (`inbox_payload.payload_format`,
//! `payload_raw_len`) and, with encryption keys, its body and audit
//! headers are sealed under the active key, whose id goes in
//! `inbox.payload_key_id`. Fingerprints stay over the body as received, so
//! every check above works as without either.

use std::collections::{HashMap, HashSet};

use deadpool_postgres::{Client, GenericClient, Transaction};

use super::advisory_lock::{lock_key, LockPurpose};
use super::db_error::PgError;
use crate::prepared_event::PreparedEvent;
use crate::AcceptOutcome;

/// Inserts the new rows of one round and returns their inbox ids. Payloads
/// and deliveries join the rows actually inserted, so a duplicate's body is
/// never written. When it inserted deliveries it also NOTIFYs the delivery
/// channel (`$25`), in the same statement: no round trip of its own, and
/// PostgreSQL sends it only if the transaction commits. (The uncorrelated
/// subquery is evaluated once, at the first row returned; no row inserted,
/// no delivery, no notification.)
const INSERT_ROUND: &str = "
    WITH candidate AS (
        SELECT * FROM unnest(
            $1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int8[],
            $8::int8[], $9::int8[], $10::text[], $11::bytea[], $12::text[], $13::text[],
            $14::text[], $15::int8[], $16::bytea[], $23::text[], $24::text[], $26::int2[],
            $27::int8[], $28::text[], $29::text[])
        AS c(id, endpoint_id, provider, provider_event_id, event_type, object_id, object_version,
             provider_created_at, received_at_ms, content_type, payload_sha256, audit_headers,
             matched_secret_version, unsigned_metadata, same_body_since, payload, payload_key_id,
             targets, payload_format, payload_raw_len, not_routed, trace_parent)
    ), inserted AS (
        INSERT INTO inbox (
            id, endpoint_id, provider, provider_event_id, event_type, object_id, object_version,
            provider_created_at, received_at_ms, content_type, payload_sha256, audit_headers,
            matched_secret_version, unsigned_metadata, payload_key_id, targets, status, not_routed,
            trace_parent)
        SELECT c.id, c.endpoint_id, c.provider, c.provider_event_id, c.event_type, c.object_id,
               c.object_version, c.provider_created_at, c.received_at_ms, c.content_type,
               c.payload_sha256, c.audit_headers, c.matched_secret_version, c.unsigned_metadata,
               c.payload_key_id, c.targets,
               CASE WHEN c.targets = '[]' THEN 'PROCESSED' ELSE 'ACCEPTED' END, c.not_routed,
               c.trace_parent
        FROM candidate c
        WHERE c.same_body_since IS NULL OR NOT EXISTS (
            SELECT 1 FROM inbox i
            WHERE i.endpoint_id = c.endpoint_id AND i.payload_sha256 = c.payload_sha256
              AND i.received_at_ms >= c.same_body_since AND i.unsigned_metadata IS NOT NULL)
        ORDER BY c.endpoint_id, c.provider_event_id
        ON CONFLICT (endpoint_id, provider_event_id) DO NOTHING
        RETURNING id
    ), payload AS (
        INSERT INTO inbox_payload (inbox_id, payload, received_at_ms, payload_format, payload_raw_len)
        SELECT c.id, c.payload, c.received_at_ms, c.payload_format, c.payload_raw_len
        FROM candidate c JOIN inserted USING (id)
    ), deliveries AS (
        INSERT INTO delivery (
            inbox_id, endpoint_id, target, generation, status, attempts, next_attempt_at_ms,
            ordering_key, object_version, created_at_ms)
        SELECT d.inbox_id, d.endpoint_id, d.target, 0, 'PENDING', 0, d.due_ms, d.ordering_key,
               d.object_version, d.due_ms
        FROM unnest($17::text[], $18::text[], $19::text[], $20::int8[], $21::text[], $22::int8[])
             AS d(inbox_id, endpoint_id, target, due_ms, ordering_key, object_version)
        JOIN inserted ON inserted.id = d.inbox_id
        RETURNING 1
    )
    SELECT id, (SELECT count(*) FROM (SELECT pg_notify($25, '') FROM deliveries LIMIT 1) AS n)
    FROM inserted";

/// What the rows holding each unresolved event's identities make of it:
/// the row with its (endpoint, id) and whether it is the same event (the
/// same body, or a row reconciliation fetched: its body is the API's
/// rendering, never the webhook's bytes), and the first same-body row
/// inside the window (events that check by body).
const RESOLVE: &str = "
    SELECT c.ord, by_id.id,
           by_id.payload_sha256 = c.payload_sha256 OR by_id.fetched_at_ms IS NOT NULL, by_body.id
    FROM unnest($1::text[], $2::text[], $3::bytea[], $4::int8[]) WITH ORDINALITY
         AS c(endpoint_id, provider_event_id, payload_sha256, same_body_since, ord)
    LEFT JOIN inbox by_id
           ON by_id.endpoint_id = c.endpoint_id AND by_id.provider_event_id = c.provider_event_id
    LEFT JOIN LATERAL (
        SELECT i.id FROM inbox i
        WHERE c.same_body_since IS NOT NULL
          AND i.endpoint_id = c.endpoint_id AND i.payload_sha256 = c.payload_sha256
          AND i.received_at_ms >= c.same_body_since AND i.unsigned_metadata IS NOT NULL
        ORDER BY i.received_at_ms LIMIT 1) by_body ON true";

/// Accepts `events` inside `tx`; one outcome per event, in order. Nothing
/// is durable until the caller commits. `notify_channel` is NOTIFYed when
/// deliveries were inserted.
pub(crate) async fn accept_batch(
    tx: &Transaction<'_>,
    schema: &str,
    notify_channel: &str,
    events: &[&PreparedEvent],
) -> Result<Vec<AcceptOutcome>, PgError> {
    let copies = Copies::of(events);
    lock_body_identities(tx, schema, events, &copies.distinct).await?;

    let mut outcomes: Vec<Option<AcceptOutcome>> = vec![None; events.len()];
    let mut pending = copies.distinct.clone();
    while !pending.is_empty() {
        let (round, deferred) = split_round(events, pending);
        let round_events: Vec<&PreparedEvent> = round.iter().map(|&i| events[i]).collect();
        let inserted = insert_round(tx, notify_channel, &round_events).await?;
        let resolved = resolve_round(tx, &round_events, &inserted).await?;
        for (index, outcome) in round.iter().zip(resolved) {
            outcomes[*index] = Some(outcome);
        }
        pending = deferred;
    }
    copies.answer(outcomes)
}

/// Accepts `events` with one statement outside any transaction block, when
/// they fit in one (see [`fits_one_statement`]); `None` when they do not,
/// and nothing was sent.
///
/// The statement commits by itself (an implicit transaction): its answer
/// arrives after PostgreSQL's COMMIT, and with `synchronous_commit = on`
/// after that commit's WAL flush — the same guarantee as an explicit
/// COMMIT's answer, for one round trip instead of three (BEGIN, INSERT,
/// COMMIT). No answer (a lost connection) is an error: unknown outcome.
/// The events it did not insert are resolved afterwards, by a read of the
/// committed rows that hold their ids — the rows that made ON CONFLICT skip
/// them, which only retention deletes (then it is an error, retryable).
/// If that read fails, the whole batch is answered 503 although its new
/// rows are committed: the provider's retry finds them (a duplicate, same
/// id), as after any commit whose answer was lost.
pub(crate) async fn accept_in_one_statement(
    client: &Client,
    notify_channel: &str,
    events: &[&PreparedEvent],
) -> Result<Option<Vec<AcceptOutcome>>, PgError> {
    let copies = Copies::of(events);
    let distinct: Vec<&PreparedEvent> = copies.distinct.iter().map(|&i| events[i]).collect();
    if !fits_one_statement(&distinct) {
        return Ok(None);
    }
    let inserted = insert_round(client, notify_channel, &distinct).await?;
    let resolved = resolve_round(client, &distinct, &inserted).await?;
    let mut outcomes: Vec<Option<AcceptOutcome>> = vec![None; events.len()];
    for (index, outcome) in copies.distinct.iter().zip(resolved) {
        outcomes[*index] = Some(outcome);
    }
    copies.answer(outcomes).map(Some)
}

/// Distinct events (copies merged) that one INSERT can accept with the
/// semantics of the module doc: none checks or stores a body identity
/// (those need the advisory locks first, in a transaction), and no two
/// share an (endpoint, event id) (those need successive rounds).
fn fits_one_statement(distinct: &[&PreparedEvent]) -> bool {
    let mut ids = HashSet::new();
    distinct.iter().all(|prepared| {
        let event = &prepared.event;
        !prepared.has_body_identity()
            && ids.insert((event.endpoint_id.as_str(), event.provider_event_id.as_str()))
    })
}

/// The copies of one event (same endpoint, id and body) in a batch: they
/// are sent once and share one answer.
struct Copies {
    /// For each event, the index of its first copy.
    copy_of: Vec<usize>,
    /// The first copies, in order.
    distinct: Vec<usize>,
}

impl Copies {
    fn of(events: &[&PreparedEvent]) -> Copies {
        let mut first_copy: HashMap<(&str, &str, &[u8]), usize> = HashMap::new();
        let mut copy_of = Vec::with_capacity(events.len());
        let mut distinct = Vec::new();
        for (index, prepared) in events.iter().enumerate() {
            let event = &prepared.event;
            let key = (
                event.endpoint_id.as_str(),
                event.provider_event_id.as_str(),
                event.fingerprint.as_bytes(),
            );
            let first = *first_copy.entry(key).or_insert_with(|| {
                distinct.push(index);
                index
            });
            copy_of.push(first);
        }
        Copies { copy_of, distinct }
    }

    /// Every event's answer from its first copy's: a later copy of an
    /// inserted event is its duplicate.
    fn answer(&self, outcomes: Vec<Option<AcceptOutcome>>) -> Result<Vec<AcceptOutcome>, PgError> {
        self.copy_of
            .iter()
            .enumerate()
            .map(|(index, &first)| {
                let outcome = outcomes[first].clone().ok_or_else(|| {
                    PgError::Invariant("an event of the batch was not resolved".into())
                })?;
                Ok(match outcome {
                    AcceptOutcome::Inserted { id } if index != first => {
                        AcceptOutcome::Duplicate { id }
                    }
                    other => other,
                })
            })
            .collect()
    }
}

/// Takes the advisory lock of every (endpoint, fingerprint) the batch
/// checks or stores, in sorted order (see the module doc).
async fn lock_body_identities(
    tx: &Transaction<'_>,
    schema: &str,
    events: &[&PreparedEvent],
    distinct: &[usize],
) -> Result<(), PgError> {
    let mut keys: Vec<i64> = distinct
        .iter()
        .map(|&i| events[i])
        .filter(|prepared| prepared.has_body_identity())
        .map(|prepared| {
            lock_key(
                schema,
                LockPurpose::Fingerprint,
                &[
                    prepared.event.endpoint_id.as_bytes(),
                    prepared.event.fingerprint.as_bytes(),
                ],
            )
        })
        .collect();
    if keys.is_empty() {
        return Ok(());
    }
    keys.sort_unstable();
    keys.dedup();
    let statement = tx
        .prepare_cached("SELECT pg_advisory_xact_lock(k) FROM unnest($1::int8[]) AS k")
        .await?;
    tx.execute(&statement, &[&keys]).await?;
    Ok(())
}

/// The events of `pending` that can go in one round (each identity once),
/// and the rest, in their order.
fn split_round(events: &[&PreparedEvent], pending: Vec<usize>) -> (Vec<usize>, Vec<usize>) {
    let mut ids = HashSet::new();
    let mut bodies = HashSet::new();
    let mut round = Vec::new();
    let mut deferred = Vec::new();
    for index in pending {
        let event = &events[index].event;
        let id = (event.endpoint_id.as_str(), event.provider_event_id.as_str());
        let body = (event.endpoint_id.as_str(), event.fingerprint.as_bytes());
        let body_taken = events[index].has_body_identity() && bodies.contains(&body);
        if ids.contains(&id) || body_taken {
            deferred.push(index);
            continue;
        }
        ids.insert(id);
        if events[index].has_body_identity() {
            bodies.insert(body);
        }
        round.push(index);
    }
    (round, deferred)
}

/// One round's INSERT: the ids of the events it inserted.
async fn insert_round(
    client: &impl GenericClient,
    notify_channel: &str,
    events: &[&PreparedEvent],
) -> Result<HashSet<String>, PgError> {
    let column = |f: fn(&PreparedEvent) -> Option<String>| -> Vec<Option<String>> {
        events.iter().map(|p| f(p)).collect()
    };
    let ids: Vec<&str> = events.iter().map(|p| p.id.as_str()).collect();
    let endpoints: Vec<&str> = events
        .iter()
        .map(|p| p.event.endpoint_id.as_str())
        .collect();
    let providers: Vec<&str> = events.iter().map(|p| p.event.provider.as_str()).collect();
    let event_ids: Vec<&str> = events
        .iter()
        .map(|p| p.event.provider_event_id.as_str())
        .collect();
    let event_types = column(|p| p.event.event_type.clone());
    let object_ids = column(|p| p.event.object_id.clone());
    let object_versions: Vec<Option<i64>> = events.iter().map(|p| p.event.object_version).collect();
    let created_at: Vec<Option<i64>> = events.iter().map(|p| p.event.provider_created_at).collect();
    let received_at: Vec<i64> = events.iter().map(|p| p.event.received_at_ms).collect();
    let content_types = column(|p| p.event.content_type.clone());
    let fingerprints: Vec<&[u8]> = events
        .iter()
        .map(|p| p.event.fingerprint.as_bytes())
        .collect();
    let audit_headers: Vec<&str> = events.iter().map(|p| p.audit_headers.as_str()).collect();
    let secret_versions: Vec<&str> = events
        .iter()
        .map(|p| p.event.matched_secret_version.as_str())
        .collect();
    let unsigned = column(|p| p.event.unsigned_metadata.to_column());
    let same_body_since: Vec<Option<i64>> = events.iter().map(|p| p.same_body_since()).collect();
    let payloads: Vec<&[u8]> = events
        .iter()
        .map(|p| p.stored_body.bytes.as_ref())
        .collect();
    let key_ids: Vec<Option<&str>> = events
        .iter()
        .map(|p| p.stored_body.key_id.as_deref())
        .collect();
    let formats: Vec<i16> = events
        .iter()
        .map(|p| p.stored_body.format.column())
        .collect();
    let raw_lens: Vec<i64> = events
        .iter()
        .map(|p| p.stored_body.raw_len_column())
        .collect();
    let targets: Vec<&str> = events.iter().map(|p| p.targets.as_str()).collect();
    let not_routed: Vec<Option<&str>> = events.iter().map(|p| p.not_routed.as_deref()).collect();
    let trace_parents: Vec<Option<&str>> = events
        .iter()
        .map(|p| p.event.trace_parent.as_deref())
        .collect();

    let deliveries = DeliveryColumns::of(events);

    let statement = client.prepare_cached(INSERT_ROUND).await?;
    let rows = client
        .query(
            &statement,
            &[
                &ids,
                &endpoints,
                &providers,
                &event_ids,
                &event_types,
                &object_ids,
                &object_versions,
                &created_at,
                &received_at,
                &content_types,
                &fingerprints,
                &audit_headers,
                &secret_versions,
                &unsigned,
                &same_body_since,
                &payloads,
                &deliveries.inbox_ids,
                &deliveries.endpoints,
                &deliveries.targets,
                &deliveries.due_ms,
                &deliveries.ordering_keys,
                &deliveries.object_versions,
                &key_ids,
                &targets,
                &notify_channel,
                &formats,
                &raw_lens,
                &not_routed,
                &trace_parents,
            ],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|row| row.try_get::<_, String>(0))
        .collect::<Result<_, _>>()?)
}

/// Each event's outcome once its round's INSERT ran: inserted, or what
/// the rows holding its identities make of it.
async fn resolve_round(
    client: &impl GenericClient,
    events: &[&PreparedEvent],
    inserted: &HashSet<String>,
) -> Result<Vec<AcceptOutcome>, PgError> {
    let mut outcomes: Vec<Option<AcceptOutcome>> = events
        .iter()
        .map(|p| {
            inserted
                .contains(&p.id)
                .then(|| AcceptOutcome::Inserted { id: p.id.clone() })
        })
        .collect();
    let unresolved: Vec<usize> = (0..events.len())
        .filter(|&i| outcomes[i].is_none())
        .collect();
    if !unresolved.is_empty() {
        let statement = client.prepare_cached(RESOLVE).await?;
        let endpoints: Vec<&str> = unresolved
            .iter()
            .map(|&i| events[i].event.endpoint_id.as_str())
            .collect();
        let event_ids: Vec<&str> = unresolved
            .iter()
            .map(|&i| events[i].event.provider_event_id.as_str())
            .collect();
        let fingerprints: Vec<&[u8]> = unresolved
            .iter()
            .map(|&i| events[i].event.fingerprint.as_bytes())
            .collect();
        let since: Vec<Option<i64>> = unresolved
            .iter()
            .map(|&i| events[i].same_body_since())
            .collect();
        for row in client
            .query(&statement, &[&endpoints, &event_ids, &fingerprints, &since])
            .await?
        {
            let ordinal: i64 = row.try_get(0)?;
            let by_id: Option<String> = row.try_get(1)?;
            let same_body: Option<bool> = row.try_get(2)?;
            let by_body: Option<String> = row.try_get(3)?;
            let Some(&index) = usize::try_from(ordinal - 1)
                .ok()
                .and_then(|o| unresolved.get(o))
            else {
                continue;
            };
            outcomes[index] = match (by_id, same_body, by_body) {
                (Some(id), Some(true), _) => Some(AcceptOutcome::Duplicate { id }),
                (Some(id), _, _) => Some(AcceptOutcome::Conflict { id }),
                (None, _, Some(id)) => Some(AcceptOutcome::Duplicate { id }),
                (None, _, None) => None,
            };
        }
    }
    outcomes
        .into_iter()
        .map(|outcome| {
            // Not inserted, yet no row holds it: only a row deleted in
            // between (retention) could do that. Unknown, so retryable.
            outcome
                .ok_or_else(|| PgError::Invariant("an event was neither inserted nor found".into()))
        })
        .collect()
}

/// The delivery rows of a round, one per (event, target), as columns.
struct DeliveryColumns<'a> {
    inbox_ids: Vec<&'a str>,
    endpoints: Vec<&'a str>,
    targets: Vec<&'a str>,
    due_ms: Vec<i64>,
    ordering_keys: Vec<Option<&'a str>>,
    object_versions: Vec<Option<i64>>,
}

impl<'a> DeliveryColumns<'a> {
    fn of(events: &[&'a PreparedEvent]) -> DeliveryColumns<'a> {
        let mut columns = DeliveryColumns {
            inbox_ids: Vec::new(),
            endpoints: Vec::new(),
            targets: Vec::new(),
            due_ms: Vec::new(),
            ordering_keys: Vec::new(),
            object_versions: Vec::new(),
        };
        for prepared in events {
            let event = &prepared.event;
            // Ordering needs both an object id and a version to order by.
            let (ordering_key, object_version) = match (&event.object_id, event.object_version) {
                (Some(object_id), Some(version)) => (Some(object_id.as_str()), Some(version)),
                _ => (None, None),
            };
            for target in &event.targets {
                columns.inbox_ids.push(&prepared.id);
                columns.endpoints.push(&event.endpoint_id);
                columns.targets.push(target);
                columns.due_ms.push(event.first_due_ms(target));
                columns.ordering_keys.push(ordering_key);
                columns.object_versions.push(object_version);
            }
        }
        columns
    }
}

impl PreparedEvent {
    /// It is checked against, or can be found by, its body fingerprint.
    fn has_body_identity(&self) -> bool {
        self.event.fingerprint_window_ms.is_some() || !self.event.unsigned_metadata.is_empty()
    }

    /// The earliest `received_at_ms` of a row this event duplicates by body.
    fn same_body_since(&self) -> Option<i64> {
        self.event
            .fingerprint_window_ms
            .map(|window| self.event.received_at_ms.saturating_sub(window))
    }
}
