//! Moves WAL frames into the database file from a thread of its own, so the
//! writer's commits do not pay for checkpoints (PASSIVE never blocks the
//! writer). The writer keeps SQLite's automatic checkpoint only as a
//! backstop at a high threshold.
//!
//! At the same pace it closes the readers' files of payload segments that
//! any process deleted (`PayloadFiles::close_deleted`): a deleted segment
//! is never read again, so without this its space stayed allocated until
//! a restart (docs/architecture.md §6).

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use super::payload_log::PayloadFiles;

pub(crate) fn run(path: PathBuf, interval: Duration, files: &PayloadFiles, stop: Receiver<()>) {
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
        let closed = files.close_deleted();
        if closed > 0 {
            tracing::debug!(
                message = "Closed files of deleted payload segments.",
                closed
            );
        }
        if let Err(error) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::debug!(message = "Passive checkpoint skipped.", %error);
        }
    }
}
