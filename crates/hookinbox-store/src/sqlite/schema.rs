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
