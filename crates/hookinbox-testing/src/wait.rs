//! Waiting for something to happen, bounded.

use std::time::{Duration, Instant};

/// Polls `check` every 20 ms until it holds (`true`) or `timeout` passes
/// (`false`). For waiting on a positive signal only: that something did
/// *not* happen is shown by a state that rules it out, never by a wait.
pub async fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
