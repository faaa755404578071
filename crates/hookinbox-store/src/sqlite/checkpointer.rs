//! Moves WAL frames into the database file from a thread of its own, so the
//! writer's commits do not pay for checkpoints (PASSIVE never blocks the
//! writer). The writer keeps SQLite's automatic checkpoint only as a
//! backstop at a high threshold.
//!
//! At the same pace it closes the readers' files of payload segments that
//! any process deleted (`PayloadFiles::close_deleted`): a deleted segment
//! is never read again, so without this its space stayed allocated until
//! a restart (docs/architecture.md §6).
//!
//! Why a bound as well (docs/architecture.md §4): SQLite starts the WAL
//! over from its beginning only when a write begins after a checkpoint
//! that copied every frame. Under steady ingress a PASSIVE checkpoint
//! seldom ends between two commits, so the file grew with every commit: 21
//! MiB of WAL for 3.6 MiB of bodies filled a small disk. Once the WAL holds
//! more than [`WAL_BOUND_BYTES`] of frames, the checkpointer copies what
//! its PASSIVE checkpoint left (`catch_up`) and asks the writer thread to
//! run a RESTART between two batches (`wal_restart`): it copies the few
//! frames still left and makes the next commit start the WAL over; that
//! commit cuts the file to `journal_size_limit` ([`WAL_KEPT_BYTES`], set on
//! the write connection). Each one's time is
//! `hookinbox_wal_restart_seconds`.
//!
//! The bound is on the frames the WAL holds (the PASSIVE checkpoint counts
//! them), not on the file's size: the file keeps its size when it starts
//! over (below), so once it had passed the bound it always looked past it,
//! and a RESTART ran at every tick, four times a second, at any rate of
//! ingress (bench/RESULTS.md §19).
//!
//! Why not TRUNCATE (to zero bytes): the bytes the WAL keeps are room
//! SQLite writes in without asking the filesystem for more. On a full disk
//! a purge needs exactly that to delete rows (`purge_room`).
//!
//! Why it keeps more than the bound: under steady ingress the WAL passes
//! the bound and starts over about once a second. Cut back below the
//! bound (it kept 4 MiB), the file gave its blocks back at each restart
//! and the commits that grew it again each paid for new blocks, whose
//! metadata every sync then wrote and waited for (the `-wal` file's size
//! and allocation, not only its frames). Kept at [`WAL_KEPT_BYTES`], the
//! file steady ingress fills is written over in place: a commit's sync
//! writes its frames and nothing else (0.7 fewer disk writes per commit at
//! 2,000 req/s with `HAVE_FDATASYNC`, bench/RESULTS.md §15).

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use rusqlite::Connection;

use super::payload_log::PayloadFiles;
use super::wal_restart::WalRestart;

/// Past this many bytes of frames in the WAL, the writer is asked for a
/// RESTART checkpoint.
pub(crate) const WAL_BOUND_BYTES: u64 = 16 << 20;

/// What the WAL is cut back to once it starts over (`journal_size_limit`):
/// four times the bound, more than the WAL reaches between two ticks at
/// saturation, so that steady ingress reuses the file in place (see the
/// module doc). Only a WAL that grew far past it (a reader held a
/// snapshot for long) is cut.
pub(crate) const WAL_KEPT_BYTES: i64 = 4 * WAL_BOUND_BYTES as i64;

pub(crate) fn run(
    path: PathBuf,
    interval: Duration,
    files: &PayloadFiles,
    wal_restart: &WalRestart,
    stop: Receiver<()>,
) {
    let conn = match super::open_connection(&path, Duration::from_millis(100)) {
        Ok(conn) => conn,
        Err(error) => {
            tracing::warn!(message = "Checkpointer could not open the database; relying on automatic checkpoints.", %error);
            return;
        }
    };
    let frame_bytes = match wal_frame_bytes(&conn) {
        Ok(bytes) => bytes,
        Err(error) => {
            tracing::warn!(message = "Checkpointer could not read the page size; relying on automatic checkpoints.", %error);
            return;
        }
    };
    loop {
        match stop.recv_timeout(interval) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        let closed = files.close_deleted();
        if closed > 0 {
            tracing::debug!(
                message = "Closed files of deleted payload segments.",
                closed
            );
        }
        let passive = match checkpoint(&conn, "PASSIVE") {
            Ok(passive) => passive,
            Err(error) => {
                tracing::debug!(message = "Passive checkpoint skipped.", %error);
                continue;
            }
        };
        if passive.wal_bytes(frame_bytes) > WAL_BOUND_BYTES {
            let _last = catch_up(&conn, passive);
            wal_restart.ask();
        }
    }
}

/// Copies, with more PASSIVE checkpoints, the frames committed while the
/// last one ran, until few are left: the RESTART that follows copies what
/// is left and syncs the database file on the writer thread, so the
/// writer's next batch waits for those frames only. After a passive
/// checkpoint of a WAL at its bound (tens of milliseconds under steady
/// ingress) hundreds of new frames were left (bench/RESULTS.md §19). Each
/// pass has fewer frames to copy than the one before, as it takes less
/// time.
/// Returns the last checkpoint's report.
fn catch_up(conn: &Connection, mut last: Checkpoint) -> Checkpoint {
    for _ in 0..CATCH_UP_PASSES {
        if last.frames_left() <= RESTART_FRAMES_LEFT {
            break;
        }
        match checkpoint(conn, "PASSIVE") {
            Ok(passive) => last = passive,
            Err(error) => {
                tracing::debug!(message = "Passive checkpoint skipped.", %error);
                break;
            }
        }
    }
    last
}

/// Frames a RESTART may be left to copy on the writer thread.
const RESTART_FRAMES_LEFT: u64 = 64;

/// Passive checkpoints at most before the RESTART, whatever is left: under
/// ingress faster than the copy, more would never catch up.
const CATCH_UP_PASSES: usize = 3;

/// `PRAGMA wal_checkpoint(RESTART)`: whether it copied every frame and
/// the next write starts the WAL over (`false`: the writer or a reader
/// was busy past the connection's busy timeout).
pub(crate) fn restart(conn: &Connection) -> Result<bool, rusqlite::Error> {
    Ok(checkpoint(conn, "RESTART")?.completed)
}

/// What one `PRAGMA wal_checkpoint` reported.
#[derive(Debug, Clone, Copy)]
struct Checkpoint {
    /// It was not blocked (SQLite's `busy` column is 0).
    completed: bool,
    /// Frames in the WAL when it ran (the `log` column): those written
    /// since the WAL last started over, whatever the file's size.
    wal_frames: u64,
    /// Of those, the frames copied into the database file so far (the
    /// `checkpointed` column).
    checkpointed: u64,
}

impl Checkpoint {
    /// Frames not yet in the database file when it ended.
    fn frames_left(self) -> u64 {
        self.wal_frames.saturating_sub(self.checkpointed)
    }

    /// The bytes of WAL those frames take (each frame is its page and a
    /// header).
    fn wal_bytes(self, frame_bytes: u64) -> u64 {
        self.wal_frames.saturating_mul(frame_bytes)
    }
}

/// Runs a checkpoint in `mode`.
fn checkpoint(conn: &Connection, mode: &str) -> Result<Checkpoint, rusqlite::Error> {
    let (busy, log, checkpointed): (i64, i64, i64) =
        conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?;
    Ok(Checkpoint {
        completed: busy == 0,
        // -1 when the database is not in WAL mode: no frames.
        wal_frames: u64::try_from(log).unwrap_or(0),
        checkpointed: u64::try_from(checkpointed).unwrap_or(0),
    })
}

/// The bytes one WAL frame takes: a page and its 24-byte header.
fn wal_frame_bytes(conn: &Connection) -> Result<u64, rusqlite::Error> {
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |row| row.get(0))?;
    Ok(u64::try_from(page_size).unwrap_or(0) + WAL_FRAME_HEADER_BYTES)
}

/// The header SQLite writes before each page in the WAL.
const WAL_FRAME_HEADER_BYTES: u64 = 24;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::wal_test_support::{grow, hold_snapshot};
    use super::*;

    /// The `-wal` file of the database at `db_path`.
    fn wal_path(db_path: &Path) -> PathBuf {
        let mut name = db_path.as_os_str().to_owned();
        name.push("-wal");
        PathBuf::from(name)
    }

    /// The size of the `-wal` file (0 when it is missing or unreadable: no
    /// restart is forced on a guess).
    fn wal_bytes(wal: &Path) -> u64 {
        std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
    }

    /// A writer, a WAL past its bound, and the WAL's path.
    fn wal_past(bytes: u64) -> (tempfile::TempDir, Connection, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let writer = super::super::open_connection(&db, Duration::from_secs(1)).unwrap();
        writer
            .pragma_update(None, "journal_size_limit", WAL_KEPT_BYTES)
            .unwrap();
        writer.execute_batch("CREATE TABLE t (b BLOB)").unwrap();
        // A reader's snapshot keeps a passive checkpoint from finishing,
        // as steady ingress does: the WAL grows past the bound.
        let reader = super::super::open_connection(&db, Duration::from_secs(1)).unwrap();
        grow(&writer, 100);
        hold_snapshot(&reader);
        let wal = wal_path(&db);
        while wal_bytes(&wal) <= bytes {
            grow(&writer, 100);
        }
        reader.execute_batch("COMMIT").unwrap();
        (dir, writer, wal)
    }

    #[test]
    fn after_a_restart_a_wal_far_past_its_kept_size_is_cut_to_it() {
        let (dir, writer, wal) = wal_past(WAL_KEPT_BYTES as u64);
        let checkpointer =
            super::super::open_connection(&dir.path().join("t.db"), Duration::from_secs(1))
                .unwrap();
        assert!(restart(&checkpointer).unwrap());
        grow(&writer, 1);
        assert!(
            wal_bytes(&wal) <= WAL_KEPT_BYTES as u64,
            "{} bytes of WAL after the restart",
            wal_bytes(&wal)
        );
        assert!(wal_bytes(&wal) > 0, "the kept bytes stay the WAL's");
    }

    #[test]
    fn after_a_restart_a_wal_just_past_its_bound_is_written_over_in_place() {
        let (dir, writer, wal) = wal_past(WAL_BOUND_BYTES);
        let before = wal_bytes(&wal);
        let checkpointer =
            super::super::open_connection(&dir.path().join("t.db"), Duration::from_secs(1))
                .unwrap();
        assert!(restart(&checkpointer).unwrap());
        grow(&writer, 1);
        assert_eq!(
            wal_bytes(&wal),
            before,
            "the file steady ingress fills is kept whole, and its blocks reused"
        );
    }

    #[test]
    fn the_bound_is_on_the_frames_the_wal_holds_not_on_its_file() {
        let (dir, writer, wal) = wal_past(WAL_BOUND_BYTES);
        let checkpointer =
            super::super::open_connection(&dir.path().join("t.db"), Duration::from_secs(1))
                .unwrap();
        let frame_bytes = wal_frame_bytes(&checkpointer).unwrap();
        let past = checkpoint(&checkpointer, "PASSIVE").unwrap();
        assert!(
            past.wal_bytes(frame_bytes) > WAL_BOUND_BYTES,
            "a WAL written past its bound is counted past it: {past:?}"
        );
        assert!(restart(&checkpointer).unwrap());
        grow(&writer, 1);
        let after = checkpoint(&checkpointer, "PASSIVE").unwrap();
        assert!(
            wal_bytes(&wal) > WAL_BOUND_BYTES,
            "the file keeps its size when the WAL starts over"
        );
        assert!(
            after.wal_bytes(frame_bytes) < WAL_BOUND_BYTES / 100,
            "only the frames since it started over count, so no RESTART follows: {after:?}"
        );
    }

    #[test]
    fn before_a_restart_the_frames_a_passive_checkpoint_left_are_copied() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let writer = super::super::open_connection(&db, Duration::from_secs(1)).unwrap();
        writer.execute_batch("CREATE TABLE t (b BLOB)").unwrap();
        let reader = super::super::open_connection(&db, Duration::from_secs(1)).unwrap();
        let checkpointer = super::super::open_connection(&db, Duration::from_secs(1)).unwrap();
        grow(&writer, 10);
        // A snapshot taken here keeps the passive checkpoint from copying
        // what is committed after it, as new commits do under ingress.
        hold_snapshot(&reader);
        grow(&writer, 2 * RESTART_FRAMES_LEFT as usize);
        let first = checkpoint(&checkpointer, "PASSIVE").unwrap();
        assert!(
            first.frames_left() > RESTART_FRAMES_LEFT,
            "the snapshot held frames back: {first:?}"
        );
        reader.execute_batch("COMMIT").unwrap();
        let last = catch_up(&checkpointer, first);
        assert_eq!(
            last.frames_left(),
            0,
            "the frames left are copied before the RESTART: {last:?}"
        );
        assert_eq!(last.wal_frames, first.wal_frames, "no frame was added");
    }
}
