//! What a purge frees before it writes, on a nearly full disk
//! (docs/architecture.md §4).
//!
//! SQLite needs space to delete: a purge's deletions go to the WAL first,
//! and the bodies they free (segments, the big bytes) can only go after
//! that commit. So while the filesystem has less than [`LOW_BYTES`] free,
//! each purge batch first:
//! 1. deletes the payload segments no committed row references (bytes
//!    freed without SQL: what the last batch unreferenced, a crash's or a
//!    re-seal's leftovers);
//! 2. checkpoints with RESTART, so the batch's deletions are written over
//!    the WAL's kept bytes (`journal_size_limit`, see `checkpointer`) from
//!    its beginning instead of new bytes at its end.
//!
//! Then the batch purges its rows, and the segments it unreferenced are
//! deleted right after it, as always. Bytes that committed rows still
//! reference cannot go first; the disk reserve (`disk_reserve`) is what
//! keeps the service's own bodies from taking SQLite's last bytes.

use std::path::Path;
use std::time::Duration;

use super::checkpointer;
use super::disk_reserve;

/// Under this many bytes free, a purge frees before it writes: as much as
/// the WAL may grow to before it is restarted.
pub(crate) const LOW_BYTES: u64 = checkpointer::WAL_BOUND_BYTES;

/// How long the RESTART checkpoint waits for the writer and the readers.
/// It holds the write lock while it waits for readers, and leases and
/// settlements still commit on a nearly full disk: kept short.
const RESTART_WAIT: Duration = Duration::from_millis(100);

/// Whether the filesystem of `dir` has less than [`LOW_BYTES`] free (a
/// filesystem that cannot be asked counts as low: freeing first is safe).
pub(crate) fn is_low(dir: &Path) -> bool {
    disk_reserve::free_bytes(dir).map_or(true, |free| free < LOW_BYTES)
}

/// Makes the next write start the WAL over from its beginning. Best
/// effort: a checkpoint that cannot finish (busy, or the database file
/// cannot grow) leaves the batch to try with what it has.
pub(crate) fn restart_wal(db_path: &Path) {
    let restarted =
        super::open_connection(db_path, RESTART_WAIT).and_then(|conn| checkpointer::restart(&conn));
    match restarted {
        Ok(true) => {}
        Ok(false) => tracing::debug!(message = "Purge on a nearly full disk: WAL restart busy."),
        Err(error) => {
            tracing::debug!(message = "Purge on a nearly full disk: WAL restart failed.", %error)
        }
    }
}
