//! A failpoint for tests only: with `HOOKINBOX_FAILPOINT=stall_commit:PATH`
//! the writer waits before each COMMIT for as long as the file `PATH`
//! exists — a disk that stops answering (`fsfreeze`) for exactly as long as
//! a test wants, released by deleting the file. The commit-deadline tests
//! use it to show that a stalled store answers 503 within the deadline.
//!
//! Never set it in production. Unset, each check is one load of a cached
//! value. The service's abort points (`hookinbox::failpoint`) read the same
//! variable; a value names one point.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const PREFIX: &str = "stall_commit:";
/// How often a stalled writer looks whether the file is gone.
const POLL: Duration = Duration::from_millis(5);
/// Longest one stall lasts, so a test that never releases it cannot hang
/// the writer for ever.
const LONGEST_STALL: Duration = Duration::from_secs(60);

/// Blocks the calling (writer) thread while the stall file exists.
pub(crate) fn wait_while_armed() {
    static ARMED: OnceLock<Option<PathBuf>> = OnceLock::new();
    let armed = ARMED.get_or_init(|| {
        let value = std::env::var("HOOKINBOX_FAILPOINT").ok()?;
        let path = PathBuf::from(value.strip_prefix(PREFIX)?);
        tracing::warn!(
            message = "Test failpoint armed: every commit waits while this file exists.",
            path = %path.display()
        );
        Some(path)
    });
    let Some(path) = armed else {
        return;
    };
    let started = Instant::now();
    while path.exists() && started.elapsed() < LONGEST_STALL {
        std::thread::sleep(POLL);
    }
}
