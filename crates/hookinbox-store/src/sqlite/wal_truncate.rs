//! After a purge, the WAL is checkpointed and truncated to zero bytes
//! (docs/architecture.md §6: purge means gone). With `secure_delete` the
//! pages a purge changes are written with the purged content zeroed, but
//! the WAL still holds the frames of the commits that wrote that content
//! (the accepts), until the checkpointer wraps around and overwrites them,
//! which may take as long as the next busy hour. `TRUNCATE` copies every
//! frame into the database file and cuts the WAL to nothing.
//!
//! It needs a moment with no writer and no reader on an old snapshot; it
//! takes the write lock while it waits for readers, so its own busy
//! timeout is short: a purge on a busy store gives up after
//! [`BUSY_TIMEOUT`] (the group commit waits at most that long) and the next
//! purge tries again.

use std::path::Path;
use std::time::Duration;

/// How long the truncation waits for the writer and readers to finish.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_millis(200);

/// Checkpoints the WAL of the database at `path` and truncates it; whether
/// it was done (`false`: readers or a writer kept it busy).
pub(crate) fn truncate(path: &Path) -> Result<bool, rusqlite::Error> {
    let conn = super::open_connection(path, BUSY_TIMEOUT)?;
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))?;
    Ok(busy == 0)
}
