//! What the key check reads from and writes to an SQLite database (see
//! `key_check`): the stored check values, the key ids that sealed rows,
//! whether the inbox has a row; and new check values.

use rusqlite::{params, Connection, OptionalExtension};

use crate::key_check::KeyFacts;

/// The distinct `payload_key_id`s, by a seek on `inbox_key_id` per id
/// (migration 10) rather than a walk of the whole index: each step asks
/// for the smallest id above the last one.
pub(crate) const USED_KEY_IDS: &str = "
    WITH RECURSIVE used(key_id) AS (
        SELECT min(payload_key_id) FROM inbox
        UNION ALL
        SELECT (SELECT min(payload_key_id) FROM inbox WHERE payload_key_id > used.key_id)
        FROM used WHERE used.key_id IS NOT NULL
    )
    SELECT key_id FROM used WHERE key_id IS NOT NULL";

/// Reads the facts. A database not yet migrated to check values (a reader
/// opened on an older file) has none stored.
pub(crate) fn read(conn: &Connection) -> Result<KeyFacts, rusqlite::Error> {
    let has_table = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'encryption_key_check'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    let stored = if has_table {
        conn.prepare("SELECT key_id, check_value FROM encryption_key_check ORDER BY key_id")?
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    let used = conn
        .prepare(USED_KEY_IDS)?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    let holds_events =
        conn.query_row("SELECT EXISTS (SELECT 1 FROM inbox)", [], |row| row.get(0))?;
    Ok(KeyFacts {
        stored,
        used,
        holds_events,
    })
}

/// Records check values; an id that already has one keeps it (the first
/// recorded wins, and the caller reads back and verifies).
pub(crate) fn record(
    conn: &Connection,
    values: &[(String, Vec<u8>)],
) -> Result<(), rusqlite::Error> {
    let mut insert = conn.prepare(
        "INSERT INTO encryption_key_check (key_id, check_value, recorded_at_ms)
         VALUES (?1, ?2, CAST(strftime('%s', 'now') AS INTEGER) * 1000)
         ON CONFLICT (key_id) DO NOTHING",
    )?;
    for (key_id, value) in values {
        insert.execute(params![key_id, value])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The used key ids come from seeks on `inbox_key_id`, never a walk of
    /// the inbox or of the whole index: each step of the plan is a search.
    #[test]
    fn used_key_ids_seek_the_key_id_index() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::sqlite::schema::migrate(&mut conn).unwrap();
        let mut statement = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {USED_KEY_IDS}"))
            .unwrap();
        let plan: Vec<String> = statement
            .query_map([], |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let inbox_steps: Vec<&String> = plan.iter().filter(|s| s.contains("inbox")).collect();
        assert_eq!(inbox_steps.len(), 2, "{plan:#?}");
        for step in inbox_steps {
            assert!(
                step.starts_with("SEARCH inbox USING COVERING INDEX inbox_key_id"),
                "{plan:#?}"
            );
        }
    }
}
