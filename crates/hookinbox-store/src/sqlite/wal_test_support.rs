//! Test helpers for the WAL's checkpoint and restart tests
//! (`checkpointer.rs`, `wal_restart.rs`): a table `t` of one blob column,
//! grown a page a row, and a reader's snapshot that holds checkpoints back
//! as steady ingress does.

use rusqlite::Connection;

/// Writes `pages` rows of ~4,000 bytes, about a page each, to table `t` in
/// one commit.
pub(super) fn grow(conn: &Connection, pages: usize) {
    conn.execute_batch("BEGIN").unwrap();
    for _ in 0..pages {
        conn.execute("INSERT INTO t (b) VALUES (zeroblob(4000))", [])
            .unwrap();
    }
    conn.execute_batch("COMMIT").unwrap();
}

/// Opens a read transaction on `reader` and reads `t`, so that its snapshot
/// stays until `COMMIT`: no checkpoint copies frames committed after it,
/// and the WAL cannot start over.
pub(super) fn hold_snapshot(reader: &Connection) {
    reader.execute_batch("BEGIN").unwrap();
    reader
        .query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))
        .unwrap();
}
