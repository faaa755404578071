//! Failpoints for tests only: `HOOKINBOX_FAILPOINT=<point>:PATH` makes the
//! store wait at that point for as long as the file `PATH` exists, released
//! by deleting the file. On arriving it creates `PATH.reached`, so a test
//! knows the process is there (and can, say, kill it there).
//!
//! - `stall_commit`: the writer, before each COMMIT — a disk that stops
//!   answering (`fsfreeze`) for exactly as long as a test wants. The
//!   commit-deadline tests use it to show that a stalled store answers 503
//!   within the deadline.
//! - `stall_purge`: a purge batch, after the commit that removed its rows
//!   and before the op that deletes the payload segments they no longer
//!   reference — the moment where a crash leaves segments behind. The
//!   kill -9 during purge test uses it.
//!
//! Never set it in production. Unset, each check is one load of a cached
//! value. The service's abort points (`hookinbox::failpoint`) read the same
//! variable; a value names one point.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How often a stalled point looks whether the file is gone.
const POLL: Duration = Duration::from_millis(5);
/// Longest one stall lasts, so a test that never releases it cannot hang
/// the store for ever.
const LONGEST_STALL: Duration = Duration::from_secs(60);

/// The places a test can hold the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StallPoint {
    /// The writer thread, before each COMMIT.
    Commit,
    /// `purge_batch`, between its row op and its segment op.
    Purge,
}

impl StallPoint {
    fn prefix(self) -> &'static str {
        match self {
            StallPoint::Commit => "stall_commit:",
            StallPoint::Purge => "stall_purge:",
        }
    }

    /// The stall file, when the variable names this point.
    fn armed(self) -> Option<&'static Path> {
        static COMMIT: OnceLock<Option<PathBuf>> = OnceLock::new();
        static PURGE: OnceLock<Option<PathBuf>> = OnceLock::new();
        let cell = match self {
            StallPoint::Commit => &COMMIT,
            StallPoint::Purge => &PURGE,
        };
        cell.get_or_init(|| {
            let value = std::env::var("HOOKINBOX_FAILPOINT").ok()?;
            let path = PathBuf::from(value.strip_prefix(self.prefix())?);
            tracing::warn!(
                message = "Test failpoint armed: the store waits there while this file exists.",
                point = self.prefix(),
                path = %path.display()
            );
            Some(path)
        })
        .as_deref()
    }

    /// The file that says the point was reached while armed.
    fn reached_marker(path: &Path) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(".reached");
        PathBuf::from(name)
    }

    /// Blocks the calling (writer) thread while the stall file exists.
    pub(crate) fn wait_while_armed(self) {
        if let Some(stall) = self.arrive() {
            while stall.holds() {
                std::thread::sleep(POLL);
            }
        }
    }

    /// Waits, without blocking a runtime thread, while the stall file exists.
    pub(crate) async fn wait_while_armed_async(self) {
        if let Some(stall) = self.arrive() {
            while stall.holds() {
                tokio::time::sleep(POLL).await;
            }
        }
    }

    /// At the point: when armed, marks it reached (if the file exists) and
    /// says how long to hold.
    fn arrive(self) -> Option<Stall> {
        let path = self.armed()?;
        if path.exists() {
            let _ = std::fs::write(Self::reached_marker(path), b"");
        }
        Some(Stall {
            path,
            started: Instant::now(),
        })
    }
}

/// One hold at an armed point.
struct Stall {
    path: &'static Path,
    started: Instant,
}

impl Stall {
    /// Whether to go on waiting: the file is still there, and the stall is
    /// not yet at its longest.
    fn holds(&self) -> bool {
        self.path.exists() && self.started.elapsed() < LONGEST_STALL
    }
}
