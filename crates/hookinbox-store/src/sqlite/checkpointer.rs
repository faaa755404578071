//! Moves WAL frames into the database file from a thread of its own, so the
//! writer's commits do not pay for checkpoints (PASSIVE never blocks the
//! writer). The writer keeps SQLite's automatic checkpoint only as a
//! backstop at a high threshold.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

pub(crate) fn run(path: PathBuf, interval: Duration, stop: Receiver<()>) {
    let conn = match super::open_connection(&path, Duration::from_millis(100)) {
        Ok(conn) => conn,
        Err(error) => {
            tracing::warn!(message = "Checkpointer could not open the database; relying on automatic checkpoints.", %error);
            return;
        }
    };
    loop {
        match stop.recv_timeout(interval) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        if let Err(error) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::debug!(message = "Passive checkpoint skipped.", %error);
        }
    }
}
