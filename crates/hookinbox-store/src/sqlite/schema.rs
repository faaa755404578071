//! SQLite schema and its migrations, applied in order at open and recorded
//! in `PRAGMA user_version`.

use rusqlite::Connection;

/// Each entry moves the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: the inbox.
    r#"
    CREATE TABLE inbox (
        id                     TEXT PRIMARY KEY,          -- UUIDv7: time-ordered, the idempotency key downstream
        endpoint_id            TEXT NOT NULL,
        provider               TEXT NOT NULL,
        provider_event_id      TEXT NOT NULL,
        event_type             TEXT,
        object_id              TEXT,
        object_version         INTEGER,
        provider_created_at    INTEGER,                   -- unix seconds, as the provider says
        received_at_ms         INTEGER NOT NULL,          -- unix milliseconds, our clock
        content_type           TEXT,
        payload                BLOB,                      -- raw bytes; NULL after raw retention
        payload_key_id         TEXT,                      -- NULL: plain; else the AEAD key id that encrypted it
        payload_sha256         BLOB NOT NULL,             -- fingerprint of the raw body
        audit_headers          TEXT NOT NULL,             -- JSON [[name, value], …], credentials removed
        matched_secret_version TEXT NOT NULL,
        status                 TEXT NOT NULL DEFAULT 'ACCEPTED'
                               CHECK (status IN ('ACCEPTED', 'PROCESSED', 'FAILED')),
        UNIQUE (endpoint_id, provider_event_id)
    );
    CREATE INDEX inbox_status_received ON inbox (status, received_at_ms);
    "#,
    // 2: the outbox, its attempt log, and the last delivered version per object.
    r#"
    CREATE TABLE delivery (
        id                 INTEGER PRIMARY KEY,
        inbox_id           TEXT NOT NULL REFERENCES inbox (id),
        endpoint_id        TEXT NOT NULL,
        target             TEXT NOT NULL,
        generation         INTEGER NOT NULL,          -- 0 at acceptance, +1 per replay
        status             TEXT NOT NULL
                           CHECK (status IN ('PENDING', 'LEASED', 'DELIVERED', 'SKIPPED_STALE', 'DEAD')),
        attempts           INTEGER NOT NULL,
        next_attempt_at_ms INTEGER NOT NULL,
        lease_owner        TEXT,
        lease_until_ms     INTEGER,
        last_error         TEXT,                      -- masked: never a response body or a secret
        ordering_key       TEXT,                      -- the object id, when the event has an id and a version
        object_version     INTEGER,
        created_at_ms      INTEGER NOT NULL,
        delivered_at_ms    INTEGER,
        UNIQUE (inbox_id, target, generation)
    );
    CREATE INDEX delivery_due ON delivery (endpoint_id, target, status, next_attempt_at_ms);
    CREATE INDEX delivery_ordering ON delivery (endpoint_id, target, ordering_key, status)
        WHERE ordering_key IS NOT NULL;
    CREATE INDEX delivery_inbox ON delivery (inbox_id);
    CREATE INDEX delivery_leased ON delivery (lease_until_ms) WHERE status = 'LEASED';

    CREATE TABLE delivery_attempt (
        id             INTEGER PRIMARY KEY,
        delivery_id    INTEGER NOT NULL REFERENCES delivery (id),
        attempt        INTEGER NOT NULL,
        finished_at_ms INTEGER NOT NULL,
        outcome        TEXT NOT NULL,                 -- DELIVERED, PENDING (will retry) or DEAD
        error          TEXT
    );
    CREATE INDEX delivery_attempt_delivery ON delivery_attempt (delivery_id);

    CREATE TABLE object_version (
        endpoint_id  TEXT NOT NULL,
        target       TEXT NOT NULL,
        object_id    TEXT NOT NULL,
        last_version INTEGER NOT NULL,
        PRIMARY KEY (endpoint_id, target, object_id)
    );
    "#,
    // 3: the raw payload in a table of its own. Settling a delivery moves
    // its inbox row from ACCEPTED to PROCESSED, which changes the row's
    // length; SQLite then rewrites the whole row, overflow pages included,
    // so every event's body was written to the WAL twice (a 1 MB body took
    // the writer 7 ms to rewrite). Kept apart, the body is written once.
    r#"
    CREATE TABLE inbox_payload (
        inbox_id TEXT PRIMARY KEY REFERENCES inbox (id),
        payload  BLOB NOT NULL                        -- raw bytes; the row is deleted by raw retention
    );
    INSERT INTO inbox_payload (inbox_id, payload)
        SELECT id, payload FROM inbox WHERE payload IS NOT NULL;
    ALTER TABLE inbox DROP COLUMN payload;
    "#,
    // 4: raw bodies move to the payload log beside the database (written
    // once, not once to the WAL and again by the checkpoint); the row keeps
    // where its body is. Rows from before keep theirs in inbox_payload.
    r#"
    ALTER TABLE inbox ADD COLUMN payload_segment INTEGER;  -- payload log segment; NULL: in inbox_payload, or purged
    ALTER TABLE inbox ADD COLUMN payload_offset INTEGER;
    ALTER TABLE inbox ADD COLUMN payload_len INTEGER;
    "#,
    // 5: metadata from unsigned request values is marked, and events whose
    // id is unsigned are also found by body fingerprint (a copy re-sent
    // under a new id is the same event). The index is partial: signed-id
    // rows are never looked up this way, and a random-keyed index on every
    // row would dirty a random page per insert.
    r#"
    ALTER TABLE inbox ADD COLUMN unsigned_metadata TEXT;  -- NULL: all signed; else e.g. "event_id,event_type"
    CREATE INDEX inbox_unsigned_fingerprint
        ON inbox (endpoint_id, payload_sha256, received_at_ms)
        WHERE unsigned_metadata IS NOT NULL;
    "#,
    // 6: the targets each event was accepted with, as a JSON array (`[]`:
    // none, and the row is PROCESSED from its insert on). Reconciliation
    // reads it to tell a delivery row that is missing (a target the event
    // had) from a target added later, which old events never get unless an
    // operator delivers them on purpose. NULL for rows from before: their targets are not
    // known, and reconciliation does not look for their missing rows.
    r#"
    ALTER TABLE inbox ADD COLUMN targets TEXT;
    "#,
    // 7: events a reconciliation source fetched from the provider's API
    // because their webhook never arrived: when (unix ms); NULL for every
    // event that arrived as a webhook. `events show` names them.
    r#"
    ALTER TABLE inbox ADD COLUMN fetched_at_ms INTEGER;
    "#,
    // 8: one row the readiness probe rewrites through the writer, so
    // `/readyz` knows a commit still reaches the disk (a read alone passes
    // while commits fail or hang).
    r#"
    CREATE TABLE readiness_probe (
        id           INTEGER PRIMARY KEY,
        probed_at_ms INTEGER NOT NULL
    );
    "#,
    // 9 (#10, the admin API and dashboard): every list an operator can ask
    // for (by endpoint, by type, by time; by status has its index from 1)
    // reads one index in list order and stops after a page, instead of
    // walking the inbox (see `event_query`). Each is keyed by receipt time
    // after its column, so inserts append at the end of their group.
    r#"
    CREATE INDEX inbox_received ON inbox (received_at_ms);
    CREATE INDEX inbox_endpoint_received ON inbox (endpoint_id, received_at_ms);
    CREATE INDEX inbox_type_received ON inbox (event_type, received_at_ms);
    "#,
    // 10: indexes for retention and rewrap, which scanned whole tables
    // (see `purge.rs`, `rewrap.rs`). Each inbox index is keyed by a value
    // that grows with every accept (time, segment number, the active key
    // id then rowid), so an accept appends at the right edge of each: a
    // page the batch's commit writes anyway, not a random one.
    // - bodies still held, by age: the raw payload rule (partial: a
    //   purged row leaves it, so the rule never walks past the bodies it
    //   already dropped);
    // - bodies by segment: whether a payload segment is still referenced;
    // - rows by key id: rewrap's rows not under the active key.
    // The dedup rule uses `inbox_status_received`; dead deliveries, a
    // partial index that an accept (PENDING) never enters.
    r#"
    CREATE INDEX inbox_body_received ON inbox (received_at_ms)
        WHERE payload_segment IS NOT NULL;
    CREATE INDEX inbox_body_segment ON inbox (payload_segment)
        WHERE payload_segment IS NOT NULL;
    CREATE INDEX inbox_key_id ON inbox (payload_key_id);
    CREATE INDEX delivery_dead ON delivery (next_attempt_at_ms) WHERE status = 'DEAD';
    "#,
    // 11 (#18, keys are checked before serving): one check value per
    // encryption key id, recorded the first time the id is seen and
    // verified at every start after (see `key_check`). The key ids that
    // sealed rows need no table: `inbox_key_id` (10) answers that.
    r#"
    CREATE TABLE encryption_key_check (
        key_id         TEXT PRIMARY KEY,
        check_value    BLOB NOT NULL,             -- a fixed label sealed under the key, the key id as associated data
        recorded_at_ms INTEGER NOT NULL           -- unix milliseconds, the database's clock
    );
    "#,
    // 12 (#18): the next payload segment number, so a number is never
    // handed out twice, by any process, even after its file was deleted
    // (see `segment_numbers`). It starts above every number a row names;
    // numbers only on disk are above it at the first allocation.
    r#"
    CREATE TABLE payload_segment_next (
        id   INTEGER PRIMARY KEY CHECK (id = 1),
        next INTEGER NOT NULL
    );
    INSERT INTO payload_segment_next (id, next)
        SELECT 1, coalesce(max(payload_segment), 0) + 1 FROM inbox;
    "#,
    // 13 (#20, compress before sealing): how the stored record encodes the
    // body, and the body's own length, which bounds its decompression (see
    // `stored_body`). NULL in rows from before: stored as received, their
    // length that of the record.
    r#"
    ALTER TABLE inbox ADD COLUMN payload_format INTEGER;   -- NULL or 0: as received; 1: one zstd frame
    ALTER TABLE inbox ADD COLUMN payload_raw_len INTEGER;  -- length of the body as received
    "#,
    // 14 (#21, routing): the endpoint's targets whose `event_types` or
    // `filter` did not take the event, as a JSON array; `targets` (6) holds
    // those it was routed to. NULL: every target took it (and every row
    // from before routing).
    r#"
    ALTER TABLE inbox ADD COLUMN not_routed TEXT;
    "#,
    // (#24, `hookinbox listen`): each event's place in its endpoint's
    // stream, handed out inside the write transaction that inserts it, so
    // places follow commit order (see `event_stream`). Rows from before
    // are 0 and stream first, in id order; the default costs no rewrite.
    r#"
    ALTER TABLE inbox ADD COLUMN stream_position INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX inbox_stream ON inbox (endpoint_id, stream_position, id);
    "#,
    // (#22, traces) the W3C `traceparent` of the span the event's
    // deliveries continue (docs/architecture.md §7, Traces): its trace id is
    // the event's trace. NULL: no trace (none sent, tracing off).
    r#"
    ALTER TABLE inbox ADD COLUMN trace_parent TEXT;
    "#,
    // (#21, flow control): a target's pause, circuit and token bucket, one
    // row per target that has any (see `target_gate`); read by primary key
    // in each lease, so a paused or open target's deliveries are never
    // scanned.
    r#"
    CREATE TABLE target_gate (
        endpoint_id   TEXT NOT NULL,
        target        TEXT NOT NULL,
        paused_at_ms  INTEGER,                      -- NULL: not paused
        circuit       TEXT NOT NULL DEFAULT 'CLOSED', -- CLOSED, OPEN, HALF_OPEN
        failures      INTEGER NOT NULL DEFAULT 0,   -- consecutive transient failures
        open_until_ms INTEGER,                      -- OPEN: probe time; HALF_OPEN: probe lease end
        tokens        REAL,                         -- NULL: a full bucket
        tokens_at_ms  INTEGER,
        PRIMARY KEY (endpoint_id, target)
    ) WITHOUT ROWID;
    "#,
    // (#23, handshakes): secrets a provider handed over during a
    // handshake (Asana's `X-Hook-Secret`, Notion's verification token), one
    // row per webhook, sealed with the at-rest key ring (see
    // `learned_secrets`).
    r#"
    CREATE TABLE learned_secret (
        endpoint_id   TEXT NOT NULL,
        number        INTEGER NOT NULL,             -- 1, 2, … per endpoint: secret version `learned-{number}`
        fingerprint   TEXT NOT NULL,                -- hex SHA-256 of the secret: a repeated handover
        learned_at_ms INTEGER NOT NULL,
        key_id        TEXT NOT NULL,                -- the at-rest key that sealed it
        sealed        BLOB NOT NULL,                -- nonce ‖ ciphertext ‖ tag
        PRIMARY KEY (endpoint_id, number),
        UNIQUE (endpoint_id, fingerprint)
    ) WITHOUT ROWID;
    "#,
];

/// The schema version this build writes.
pub const CURRENT_VERSION: usize = MIGRATIONS.len();

/// Brings the database to the current schema. A database newer than this
/// build is refused rather than written.
pub fn migrate(conn: &mut Connection) -> Result<(), String> {
    let version: usize = conn
        .query_row("PRAGMA user_version", [], |row| row.get::<_, i64>(0))
        .map_err(|e| e.to_string())?
        .try_into()
        .map_err(|_| "negative schema version".to_owned())?;
    if version > CURRENT_VERSION {
        return Err(format!(
            "the database has schema version {version}, newer than this build ({CURRENT_VERSION})"
        ));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        let tx = conn.transaction().map_err(|e| e.to_string())?;
        tx.execute_batch(sql)
            .map_err(|e| format!("migration {}: {e}", index + 1))?;
        tx.pragma_update(None, "user_version", (index + 1) as i64)
            .map_err(|e| e.to_string())?;
        tx.commit().map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_3_moves_stored_payloads_out_of_the_inbox() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..2] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 2).unwrap();
        for (id, payload) in [("a", Some(&b"{\"id\":1}"[..])), ("b", None)] {
            conn.execute(
                "INSERT INTO inbox (id, endpoint_id, provider, provider_event_id, received_at_ms,
                                    payload, payload_sha256, audit_headers, matched_secret_version)
                 VALUES (?1, 'e', 'lab', ?1, 0, ?2, x'00', '[]', 'v1')",
                rusqlite::params![id, payload],
            )
            .unwrap();
        }

        migrate(&mut conn).unwrap();

        let moved: Vec<(String, Vec<u8>)> = conn
            .prepare("SELECT inbox_id, payload FROM inbox_payload ORDER BY inbox_id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(moved, vec![("a".to_owned(), b"{\"id\":1}".to_vec())]);
        let inbox_rows: i64 = conn
            .query_row("SELECT count(*) FROM inbox", [], |r| r.get(0))
            .unwrap();
        assert_eq!(inbox_rows, 2);
        assert!(
            conn.prepare("SELECT payload FROM inbox").is_err(),
            "the column is gone"
        );
    }
}
