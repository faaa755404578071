//! Accepting one event: the atomic insert under UNIQUE(endpoint_id,
//! provider_event_id) with a reference to its raw body in the payload log,
//! and one delivery row per target (the outbox) — in the same transaction,
//! never read-then-write. A duplicate's body is not written. The row
//! records its targets; without any it is inserted PROCESSED.
//!
//! An event whose id is unsigned has a second identity, its body
//! fingerprint within the redelivery window; see [`accept`] for the order
//! of the checks.
//!
//! Before the event reaches the writer ([`PreparedEvent::new`]), its body
//! is compressed when that makes it smaller (`payload_format`,
//! `payload_raw_len`) and, with encryption keys, the body and the audit
//! headers are sealed under the active key, whose id goes in
//! `payload_key_id`. The fingerprint stays over the body as received, so
//! duplicates and conflicts are found as without either.

use rusqlite::{params, Connection, OptionalExtension};

use super::payload_log::PayloadLog;
use crate::prepared_event::PreparedEvent;
use crate::{AcceptOutcome, NewEvent};

#[cfg(test)]
pub(super) const INSERT_INBOX_FOR_PLANS: &str = INSERT_INBOX;

const INSERT_INBOX: &str = "
    INSERT INTO inbox (
        id, endpoint_id, provider, provider_event_id, event_type, object_id, object_version,
        provider_created_at, received_at_ms, content_type, payload_sha256,
        audit_headers, matched_secret_version, payload_segment, payload_offset, payload_len,
        unsigned_metadata, payload_key_id, targets, status, payload_format, payload_raw_len,
        not_routed, trace_parent, stream_position
    ) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
              ?21, ?22, ?23, ?24,
              -- The endpoint's next stream place, read inside this write
              -- transaction: places follow commit order (`event_stream`).
              coalesce((SELECT stream_position FROM inbox WHERE endpoint_id = ?2
                        ORDER BY stream_position DESC LIMIT 1), 0) + 1)
    ON CONFLICT (endpoint_id, provider_event_id) DO NOTHING";

/// The row holding an (endpoint, event id), its fingerprint, and whether
/// reconciliation fetched it (then any body of that id is the same event).
const LOOKUP_INBOX: &str = "SELECT id, payload_sha256, fetched_at_ms IS NOT NULL FROM inbox
     WHERE endpoint_id = ?1 AND provider_event_id = ?2";

/// The first row of the endpoint with this body received since ?3, among
/// rows with unsigned metadata (the partial index `inbox_unsigned_fingerprint`).
const LOOKUP_SAME_BODY: &str = "
    SELECT id FROM inbox
    WHERE endpoint_id = ?1 AND payload_sha256 = ?2 AND received_at_ms >= ?3
      AND unsigned_metadata IS NOT NULL
    ORDER BY received_at_ms LIMIT 1";

const INSERT_DELIVERY: &str = "
    INSERT INTO delivery (
        inbox_id, endpoint_id, target, generation, status, attempts, next_attempt_at_ms,
        ordering_key, object_version, created_at_ms
    ) VALUES (?1, ?2, ?3, 0, 'PENDING', 0, ?4, ?5, ?6, ?4)";

/// Inserts the event and its deliveries, or reports which row already is
/// this event. In order: a row with the same (endpoint, event id) makes it a
/// duplicate (same fingerprint) or a conflict, as for every event; else, for
/// an event whose id is unsigned, a row of the endpoint with the same body
/// fingerprint inside the window makes it a duplicate of that row; else it
/// is inserted.
pub(crate) fn accept(
    conn: &Connection,
    payloads: &mut PayloadLog,
    prepared: &PreparedEvent,
) -> Result<AcceptOutcome, rusqlite::Error> {
    let PreparedEvent {
        id,
        audit_headers,
        stored_body,
        targets,
        not_routed,
        event,
    } = prepared;
    if let Some(window_ms) = event.fingerprint_window_ms {
        // Reads before the insert, which cannot race: this runs inside the
        // one writer thread's transaction, so no other insert can land
        // between them. A backend with concurrent writers (PostgreSQL)
        // needs a unique key or a lock on (endpoint, fingerprint) instead.
        if let Some(existing) = same_id(conn, event)? {
            return Ok(existing);
        }
        let since = event.received_at_ms.saturating_sub(window_ms);
        let same_body: Option<String> = conn
            .prepare_cached(LOOKUP_SAME_BODY)?
            .query_row(
                params![event.endpoint_id, event.fingerprint.as_bytes(), since],
                |row| row.get(0),
            )
            .optional()?;
        if let Some(id) = same_body {
            return Ok(AcceptOutcome::Duplicate { id });
        }
    }
    let before_body = payloads.mark();
    let body = payloads.reserve(&stored_body.bytes);
    let inserted = conn.prepare_cached(INSERT_INBOX)?.execute(params![
        id,
        event.endpoint_id,
        event.provider,
        event.provider_event_id,
        event.event_type,
        event.object_id,
        event.object_version,
        event.provider_created_at,
        event.received_at_ms,
        event.content_type,
        event.fingerprint.as_bytes(),
        audit_headers,
        event.matched_secret_version,
        body.segment,
        body.offset,
        body.len,
        event.unsigned_metadata.to_column(),
        stored_body.key_id,
        targets,
        prepared.initial_status().as_str(),
        stored_body.format.column(),
        stored_body.raw_len_column(),
        not_routed,
        event.trace_parent,
    ])? == 1;
    if !inserted {
        payloads.rollback_to(before_body);
        return same_id(conn, event)?.ok_or(rusqlite::Error::QueryReturnedNoRows);
    }
    // Ordering needs both an object id and a version to order by.
    let (ordering_key, object_version) = match (&event.object_id, event.object_version) {
        (Some(object_id), Some(version)) => (Some(object_id.as_str()), Some(version)),
        _ => (None, None),
    };
    let mut insert_delivery = conn.prepare_cached(INSERT_DELIVERY)?;
    for target in &event.targets {
        insert_delivery.execute(params![
            id,
            event.endpoint_id,
            target,
            event.first_due_ms(target),
            ordering_key,
            object_version
        ])?;
    }
    Ok(AcceptOutcome::Inserted { id: id.clone() })
}

/// What the row holding the event's (endpoint, id) makes of it: the same
/// event (same fingerprint, or a row reconciliation fetched from the
/// provider's API, whose body is the API's rendering and never the
/// webhook's bytes) or a conflict; `None` when no row holds it.
fn same_id(conn: &Connection, event: &NewEvent) -> Result<Option<AcceptOutcome>, rusqlite::Error> {
    let found: Option<(String, Vec<u8>, bool)> = conn
        .prepare_cached(LOOKUP_INBOX)?
        .query_row(params![event.endpoint_id, event.provider_event_id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?;
    Ok(found.map(|(id, fingerprint, fetched)| {
        if fetched || fingerprint == event.fingerprint.as_bytes() {
            AcceptOutcome::Duplicate { id }
        } else {
            AcceptOutcome::Conflict { id }
        }
    }))
}

impl PreparedEvent {
    /// Bytes this event writes to the payload log.
    pub(crate) fn stored_len(&self) -> usize {
        self.stored_body.bytes.len()
    }
}
