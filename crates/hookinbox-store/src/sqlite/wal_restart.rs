//! The RESTART checkpoint that lets the WAL start over, run by the writer
//! thread between two batches when the checkpointer asks for it
//! (docs/architecture.md §4).
//!
//! The checkpointer thread copies frames with PASSIVE checkpoints, which
//! never block the writer; a RESTART has to take the write lock. Run by
//! the checkpointer, it competed with the writer for that lock: it waited
//! in SQLite's busy handler for a gap between two commits (1, 2, 5, 10 ms
//! steps), gave up after 20 ms when it found none, and the writer's next
//! commit slept in the same handler while the RESTART held the lock. Under
//! steady ingress enough RESTARTs gave up that the WAL reached 8192 frames,
//! where the writer's own automatic checkpoint copied the whole WAL and
//! synced the database inside a commit: acks waited up to 300 ms
//! (bench/RESULTS.md §19). The writer runs it between batches instead,
//! when it holds no lock: there is nobody to wait for but readers, and the
//! commits wait only for the work itself, once per bound of WAL.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::checkpointer;

/// How long a RESTART waits for readers (and for a writer of another
/// process) before it gives up until the checkpointer asks again. It holds
/// the write lock while it waits for readers, so this bounds what it adds
/// to the next batch.
const RESTART_WAIT: Duration = Duration::from_millis(20);

/// The checkpointer's request, shared with the writer.
#[derive(Debug, Clone)]
pub(crate) struct WalRestart {
    wanted: Arc<AtomicBool>,
    /// The write connection's own busy timeout, put back after a RESTART.
    writer_busy_timeout: Duration,
}

impl WalRestart {
    /// A request for the writer whose connection waits `writer_busy_timeout`
    /// for locks.
    pub(crate) fn new(writer_busy_timeout: Duration) -> WalRestart {
        WalRestart {
            wanted: Arc::new(AtomicBool::new(false)),
            writer_busy_timeout,
        }
    }

    /// The checkpointer: the WAL is past its bound and its frames are
    /// copied; the writer should start it over.
    pub(crate) fn ask(&self) {
        self.wanted.store(true, Ordering::Release);
    }

    /// The writer, between batches: runs the RESTART if it was asked for.
    /// A RESTART that finds readers busy past [`RESTART_WAIT`] is left for
    /// the checkpointer to ask again.
    pub(crate) fn run_if_asked(&self, conn: &Connection) {
        if !self.wanted.swap(false, Ordering::AcqRel) {
            return;
        }
        let started = Instant::now();
        let restarted = conn
            .busy_timeout(RESTART_WAIT)
            .and_then(|()| checkpointer::restart(conn));
        if let Err(error) = conn.busy_timeout(self.writer_busy_timeout) {
            tracing::warn!(message = "Could not set the writer's busy timeout back.", %error);
        }
        match restarted {
            Ok(true) => metrics::histogram!("hookinbox_wal_restart_seconds")
                .record(started.elapsed().as_secs_f64()),
            Ok(false) => tracing::debug!(message = "WAL past its bound; restart postponed (busy)."),
            Err(error) => tracing::debug!(message = "WAL past its bound; restart failed.", %error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::wal_test_support::{grow, hold_snapshot};
    use super::*;

    fn wal_frames(conn: &Connection) -> i64 {
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
            .unwrap()
    }

    #[test]
    fn the_writer_starts_the_wal_over_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let writer = super::super::open_connection(&db, Duration::from_secs(2)).unwrap();
        writer.execute_batch("CREATE TABLE t (b BLOB)").unwrap();
        let checkpointer = super::super::open_connection(&db, Duration::from_secs(2)).unwrap();
        // A reader's snapshot keeps the WAL from starting over by itself.
        let reader = super::super::open_connection(&db, Duration::from_secs(2)).unwrap();
        hold_snapshot(&reader);
        grow(&writer, 50);
        reader.execute_batch("COMMIT").unwrap();
        let request = WalRestart::new(Duration::from_secs(2));

        request.run_if_asked(&writer);
        grow(&writer, 1);
        let without = wal_frames(&checkpointer);
        assert!(
            without > 50,
            "not asked: the WAL goes on ({without} frames)"
        );

        request.ask();
        request.run_if_asked(&writer);
        grow(&writer, 1);
        let after = wal_frames(&checkpointer);
        assert!(
            after < 10,
            "asked: the next commit starts the WAL over ({after} frames)"
        );
    }

    #[test]
    fn a_restart_that_finds_a_reader_busy_gives_up_within_its_wait() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let writer = super::super::open_connection(&db, Duration::from_secs(2)).unwrap();
        writer.execute_batch("CREATE TABLE t (b BLOB)").unwrap();
        grow(&writer, 5);
        let reader = super::super::open_connection(&db, Duration::from_secs(2)).unwrap();
        hold_snapshot(&reader);
        grow(&writer, 5);
        let request = WalRestart::new(Duration::from_secs(2));
        request.ask();
        let started = Instant::now();
        request.run_if_asked(&writer);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "the writer waited {:?} for a reader, not its own 2 s timeout",
            started.elapsed()
        );
        reader.execute_batch("COMMIT").unwrap();
        grow(&writer, 1);
        let frames = wal_frames(&writer);
        assert!(
            frames > 10,
            "the reader held the RESTART off: the WAL went on ({frames} frames)"
        );
        let busy_timeout_ms: i64 = writer
            .query_row("PRAGMA busy_timeout", [], |row| row.get(0))
            .unwrap();
        assert_eq!(busy_timeout_ms, 2000, "the writer's own timeout is back");
    }
}
