//! Where log lines go: stderr, written by a thread of its own.
//!
//! `serve` logs one INFO line per accepted event (`ingress_events`). Written
//! straight to stderr, each line was a `write(2)` on the request's own
//! thread, before the answer. Here the line is formatted where it is logged
//! and handed to a bounded queue (`tracing-appender`'s non-blocking writer);
//! the writer thread takes every line waiting, writes them through one
//! buffer, and flushes when the queue is empty, so under load many lines
//! share one `write(2)` and on an idle server each line is out at once.
//!
//! The queue holds at most [`QUEUED_LINES`] lines. Past that (stderr much
//! slower than the lines come: a stuck pipe, a full disk behind it) a line
//! is dropped rather than make a request wait, and counted in
//! `hookinbox_log_lines_dropped_total`. [`LogGuard`] flushes what waits when
//! it is dropped, so a graceful stop (SIGTERM) leaves every line in the log.

use std::io::BufWriter;
use std::sync::OnceLock;

use tracing_appender::non_blocking::{ErrorCounter, NonBlocking, NonBlockingBuilder, WorkerGuard};

/// Lines that may wait for the writer thread: about 20 MB of typical lines,
/// several seconds of a saturated server's accepted events.
pub const QUEUED_LINES: usize = 100_000;

/// The writer thread's buffer: one `write(2)` per this many bytes of lines
/// waiting, at most.
const WRITE_BUFFER_BYTES: usize = 64 * 1024;

/// The drop count of the writer installed in this process, for the metric.
static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();

/// Keeps the writer thread; dropping it writes out every line still queued
/// (waiting at most a second for the thread).
#[must_use = "dropping the guard stops the log's writer thread"]
pub struct LogGuard(#[allow(dead_code)] WorkerGuard);

/// The non-blocking writer to stderr, and the guard that flushes it.
pub fn stderr() -> (NonBlocking, LogGuard) {
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(QUEUED_LINES)
        .thread_name("hookinbox-log")
        // The thread flushes the buffer whenever the queue is empty (and
        // BufWriter once more when it is dropped at the end).
        .finish(BufWriter::with_capacity(
            WRITE_BUFFER_BYTES,
            std::io::stderr(),
        ));
    let _first_wins = DROPPED.set(writer.error_counter());
    (writer, LogGuard(guard))
}

/// Lines dropped so far because the queue was full (0 without a writer).
pub fn dropped_lines() -> u64 {
    DROPPED
        .get()
        .map_or(0, |counter| counter.dropped_lines() as u64)
}

/// Records [`dropped_lines`] as `hookinbox_log_lines_dropped_total`.
pub struct LogLinesDropped;

impl LogLinesDropped {
    pub fn emit(self) {
        metrics::counter!("hookinbox_log_lines_dropped_total").absolute(dropped_lines());
    }
}
