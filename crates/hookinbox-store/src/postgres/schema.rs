//! The PostgreSQL schema and its migrations, applied in order at open (and
//! by `hookinbox migrate`), each recorded in `schema_migrations`.
//!
//! Tables and columns carry the SQLite names (`inbox`, `delivery`,
//! `delivery_attempt`, `object_version`, `inbox_payload`), so an operator's
//! queries work on both. The PostgreSQL history starts at version 1 with
//! the shape SQLite reached after its migration 5; raw bodies are in
//! `inbox_payload` (`bytea`, written once, never rewritten when the inbox
//! row's status changes).
//!
//! All migrations run in one transaction holding a transaction-scoped
//! advisory lock per schema: ten processes starting at once queue on the
//! lock, the first applies what is missing, the others then find nothing
//! to do. DDL is transactional in PostgreSQL, so a migration that fails
//! leaves the schema as it was.

use deadpool_postgres::Client;

use super::advisory_lock::{lock_key, LockPurpose};
use super::db_error::PgError;

/// Each entry moves the schema from version `i` to `i + 1`.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: the inbox, its bodies, the outbox, its attempt log, and the last
    // delivered version per ordered object.
    r#"
    CREATE TABLE inbox (
        id                     text PRIMARY KEY,          -- UUIDv7: time-ordered, the idempotency key downstream
        endpoint_id            text NOT NULL,
        provider               text NOT NULL,
        provider_event_id      text NOT NULL,
        event_type             text,
        object_id              text,
        object_version         bigint,
        provider_created_at    bigint,                    -- unix seconds, as the provider says
        received_at_ms         bigint NOT NULL,           -- unix milliseconds, our clock
        content_type           text,
        payload_sha256         bytea NOT NULL,            -- fingerprint of the raw body
        audit_headers          text NOT NULL,             -- JSON [[name, value], …], credentials removed
        matched_secret_version text NOT NULL,
        status                 text NOT NULL DEFAULT 'ACCEPTED'
                               CHECK (status IN ('ACCEPTED', 'PROCESSED', 'FAILED')),
        unsigned_metadata      text,                      -- NULL: all signed; else e.g. 'event_id,event_type'
        UNIQUE (endpoint_id, provider_event_id)
    );
    CREATE INDEX inbox_status_received ON inbox (status, received_at_ms);
    CREATE INDEX inbox_unsigned_fingerprint
        ON inbox (endpoint_id, payload_sha256, received_at_ms)
        WHERE unsigned_metadata IS NOT NULL;

    CREATE TABLE inbox_payload (
        inbox_id text PRIMARY KEY REFERENCES inbox (id),
        payload  bytea NOT NULL                           -- raw bytes; the row is deleted by raw retention
    );

    CREATE TABLE delivery (
        id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        inbox_id           text NOT NULL REFERENCES inbox (id),
        endpoint_id        text NOT NULL,
        target             text NOT NULL,
        generation         bigint NOT NULL,               -- 0 at acceptance, +1 per replay
        status             text NOT NULL
                           CHECK (status IN ('PENDING', 'LEASED', 'DELIVERED', 'SKIPPED_STALE', 'DEAD')),
        attempts           bigint NOT NULL,
        next_attempt_at_ms bigint NOT NULL,
        lease_owner        text,
        lease_until_ms     bigint,
        last_error         text,                          -- masked: never a response body or a secret
        ordering_key       text,                          -- the object id, when the event has an id and a version
        object_version     bigint,
        created_at_ms      bigint NOT NULL,
        delivered_at_ms    bigint,
        UNIQUE (inbox_id, target, generation)
    );
    -- Only PENDING rows are ever looked for by due time: a partial index
    -- stays small however many delivered rows the table holds.
    CREATE INDEX delivery_due ON delivery (endpoint_id, target, next_attempt_at_ms, id)
        WHERE status = 'PENDING';
    CREATE INDEX delivery_ordering ON delivery (endpoint_id, target, ordering_key, status)
        WHERE ordering_key IS NOT NULL;
    CREATE INDEX delivery_inbox ON delivery (inbox_id);
    CREATE INDEX delivery_leased ON delivery (lease_until_ms) WHERE status = 'LEASED';
    -- One delivery in flight per ordered object, as a constraint: the
    -- lease takes an advisory lock per object so it never trips this, and
    -- if a bug ever did, the lease fails instead of sending out of order.
    CREATE UNIQUE INDEX delivery_one_in_flight_per_object
        ON delivery (endpoint_id, target, ordering_key)
        WHERE status = 'LEASED' AND ordering_key IS NOT NULL;

    CREATE TABLE delivery_attempt (
        id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        delivery_id    bigint NOT NULL REFERENCES delivery (id),
        attempt        bigint NOT NULL,
        finished_at_ms bigint NOT NULL,
        outcome        text NOT NULL,                     -- DELIVERED, PENDING (will retry) or DEAD
        error          text
    );
    CREATE INDEX delivery_attempt_delivery ON delivery_attempt (delivery_id);

    CREATE TABLE object_version (
        endpoint_id  text NOT NULL,
        target       text NOT NULL,
        object_id    text NOT NULL,
        last_version bigint NOT NULL,
        PRIMARY KEY (endpoint_id, target, object_id)
    );
    "#,
    // 2: encryption at rest. The key that sealed a row's body
    // (`inbox_payload.payload`) and its audit headers (then base64 of the
    // sealed JSON); NULL: both plain. The SQLite schema had this column
    // from its first version.
    r#"
    ALTER TABLE inbox ADD COLUMN payload_key_id text;
    "#,
    // 3: bodies out of line, uncompressed. The default (EXTENDED) makes
    // PostgreSQL try pglz on every body over ~2 KiB; sealed bodies never
    // compress, so it was CPU spent for nothing on the ingress path
    // (the benchmark measured 1.5–2.1× more acks/s without it). Rows
    // written before keep their form; both read the same.
    r#"
    ALTER TABLE inbox_payload ALTER COLUMN payload SET STORAGE EXTERNAL;
    "#,
    // 4: the targets each event was accepted with, as a JSON array (`[]`:
    // none, and the row is PROCESSED from its insert on). Reconciliation
    // reads it to tell a delivery row that is missing (a target the event
    // had) from a target added later, which old events never get unless an
    // operator delivers them on purpose. NULL for rows from before: their targets are not
    // known, and reconciliation does not look for their missing rows.
    r#"
    ALTER TABLE inbox ADD COLUMN targets text;
    "#,
    // 5: events a reconciliation source fetched from the provider's API
    // because their webhook never arrived: when (unix ms); NULL for every
    // event that arrived as a webhook. `events show` names them.
    r#"
    ALTER TABLE inbox ADD COLUMN fetched_at_ms bigint;
    "#,
    // 6: one row the readiness probe rewrites, so `/readyz` knows a commit
    // still succeeds (a read alone passes while writes fail).
    r#"
    CREATE TABLE readiness_probe (
        id           integer PRIMARY KEY,
        probed_at_ms bigint NOT NULL
    );
    "#,
    // 7 (#10, the admin API and dashboard): every list an operator can ask
    // for (by endpoint, by type, by time; by status has its index from 1)
    // reads one index in list order and stops after a page (see
    // `event_query`). Inside the migration transaction, so not
    // CONCURRENTLY: on a large existing inbox, writes wait for the build.
    r#"
    CREATE INDEX inbox_received ON inbox (received_at_ms);
    CREATE INDEX inbox_endpoint_received ON inbox (endpoint_id, received_at_ms);
    CREATE INDEX inbox_type_received ON inbox (event_type, received_at_ms);
    "#,
    // 8: indexes for retention and rewrap, which scanned whole tables
    // (see `purge.rs`, `rewrap.rs`).
    // - bodies by age, for the raw payload rule: the body's row carries
    //   its event's `received_at_ms`, so the index holds exactly the
    //   bodies still kept (a purged body's row, and its entry, are gone);
    //   an accept appends at its right edge;
    // - rows by key id, for rewrap's rows not under the active key;
    // - dead deliveries by when they died (partial: an accept, PENDING,
    //   never enters it).
    // The dedup rule uses `inbox_status_received`.
    r#"
    ALTER TABLE inbox_payload ADD COLUMN received_at_ms bigint;
    UPDATE inbox_payload p SET received_at_ms = i.received_at_ms FROM inbox i WHERE i.id = p.inbox_id;
    ALTER TABLE inbox_payload ALTER COLUMN received_at_ms SET NOT NULL;
    CREATE INDEX inbox_payload_received ON inbox_payload (received_at_ms);
    CREATE INDEX inbox_key_id ON inbox (payload_key_id);
    CREATE INDEX delivery_dead ON delivery (next_attempt_at_ms) WHERE status = 'DEAD';
    "#,
    // 9 (#7, the delivery drain): drop `delivery_inbox`. The index of
    // UNIQUE (inbox_id, target, generation) starts with `inbox_id` and
    // serves every lookup by event; the duplicate cost an index entry for
    // each version of a delivery row — its insert and both of its updates
    // (leased, settled), as no update of `status` is HOT.
    r#"
    DROP INDEX delivery_inbox;
    "#,
    // 10 (#18, keys are checked before serving): one check value per
    // encryption key id, recorded the first time the id is seen and
    // verified at every start after (see `key_check`). The key ids that
    // sealed rows need no table: `inbox_key_id` (8) answers that.
    r#"
    CREATE TABLE encryption_key_check (
        key_id         text PRIMARY KEY,
        check_value    bytea NOT NULL,            -- a fixed label sealed under the key, the key id as associated data
        recorded_at_ms bigint NOT NULL            -- unix milliseconds, the database's clock
    );
    "#,
    // 11 (#20, compress before sealing): how the stored record encodes the
    // body, and the body's own length, which bounds its decompression (see
    // `stored_body`); beside the bytes, so a purged body takes them along.
    // NULL in rows from before: stored as received, their length that of
    // the record.
    r#"
    ALTER TABLE inbox_payload ADD COLUMN payload_format smallint;   -- NULL or 0: as received; 1: one zstd frame
    ALTER TABLE inbox_payload ADD COLUMN payload_raw_len bigint;    -- length of the body as received
    "#,
    // 12 (#21, routing): the endpoint's targets whose `event_types` or
    // `filter` did not take the event, as a JSON array; `targets` (4) holds
    // those it was routed to. NULL: every target took it (and every row
    // from before routing).
    r#"
    ALTER TABLE inbox ADD COLUMN not_routed text;
    "#,
    // (#24, `hookinbox listen`): the transaction that inserted each row,
    // which orders an endpoint's stream (see `event_stream`): a reader
    // streams only rows of transactions below its snapshot's xmin, all of
    // which have ended. Rows from before read as '1' (a constant default:
    // no rewrite), then new rows take their transaction's id.
    r#"
    ALTER TABLE inbox ADD COLUMN stream_xact xid8 NOT NULL DEFAULT '1';
    ALTER TABLE inbox ALTER COLUMN stream_xact SET DEFAULT pg_current_xact_id();
    CREATE INDEX inbox_stream ON inbox (endpoint_id, stream_xact, id);
    "#,
    // (#22, traces) the W3C `traceparent` of the span the event's
    // deliveries continue (docs/architecture.md §7, Traces): its trace id is
    // the event's trace. NULL: no trace (none sent, tracing off).
    r#"
    ALTER TABLE inbox ADD COLUMN trace_parent text;
    "#,
    // (#21, flow control): a target's pause, circuit and token bucket, one
    // row per target that has any (see `target_gate`); read by primary key
    // in each lease (locked when it has tokens or a circuit to write), so a
    // paused or open target's deliveries are never scanned.
    r#"
    CREATE TABLE target_gate (
        endpoint_id   text NOT NULL,
        target        text NOT NULL,
        paused_at_ms  bigint,                       -- NULL: not paused
        circuit       text NOT NULL DEFAULT 'CLOSED', -- CLOSED, OPEN, HALF_OPEN
        failures      integer NOT NULL DEFAULT 0,   -- consecutive transient failures
        open_until_ms bigint,                       -- OPEN: probe time; HALF_OPEN: probe lease end
        tokens        double precision,             -- NULL: a full bucket
        tokens_at_ms  bigint,
        PRIMARY KEY (endpoint_id, target)
    );
    "#,
    // (#23, handshakes): secrets a provider handed over during a
    // handshake (Asana's `X-Hook-Secret`, Notion's verification token), one
    // row per webhook, sealed with the at-rest key ring (see
    // `learned_secrets`).
    r#"
    CREATE TABLE learned_secret (
        endpoint_id   text NOT NULL,
        number        bigint NOT NULL,              -- 1, 2, … per endpoint: secret version `learned-{number}`
        fingerprint   text NOT NULL,                -- hex SHA-256 of the secret: a repeated handover
        learned_at_ms bigint NOT NULL,
        key_id        text NOT NULL,                -- the at-rest key that sealed it
        sealed        bytea NOT NULL,               -- nonce ‖ ciphertext ‖ tag
        PRIMARY KEY (endpoint_id, number),
        UNIQUE (endpoint_id, fingerprint)
    );
    "#,
];

/// The schema version this build writes.
pub const CURRENT_VERSION: usize = MIGRATIONS.len();

/// Brings `schema` (the connection's search path; `None`: the server's
/// default) to the current version. A schema newer than this build is
/// refused rather than written.
pub(crate) async fn migrate(client: &mut Client, schema: Option<&str>) -> Result<(), PgError> {
    let tx = client.transaction().await?;
    let key = lock_key(schema.unwrap_or(""), LockPurpose::Migrate, &[]);
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&key])
        .await?;
    // `IF NOT EXISTS` on what exists answers with a NOTICE, which the driver
    // logs on every start and every command ("relation … already exists,
    // skipping"): noise, so notices are off for this transaction only.
    tx.batch_execute("SET LOCAL client_min_messages = warning")
        .await?;
    if let Some(schema) = schema {
        // Checked by `PostgresOptions::checked_schema`: safe to splice.
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .await?;
    }
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await?;
    let version: i32 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM schema_migrations",
            &[],
        )
        .await?
        .try_get(0)?;
    let version = usize::try_from(version)
        .map_err(|_| PgError::Invariant(format!("negative schema version {version}")))?;
    if version > CURRENT_VERSION {
        return Err(PgError::Invariant(format!(
            "the database has schema version {version}, newer than this build ({CURRENT_VERSION})"
        )));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        tx.batch_execute(sql).await?;
        let applied = i32::try_from(index + 1).unwrap_or(i32::MAX);
        tx.execute(
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            &[&applied],
        )
        .await?;
        tracing::info!(
            message = "Applied a PostgreSQL migration.",
            version = applied
        );
    }
    tx.commit().await?;
    Ok(())
}
