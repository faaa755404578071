//! Storage read faults seen by this process's delivery workers, for
//! `/readyz`: a delivery whose event could not be read from our own
//! storage (a body that does not read, authenticate or match its
//! fingerprint, a key not in the ring) waits without spending an attempt
//! (docs/architecture.md §5), and readiness says why the backlog does not
//! move, naming `storage_reads` among its degraded checks while a fault
//! was seen in the last [`RECENT_MS`].
//!
//! Degraded, not failing: ingress still accepts and commits events, and a
//! load balancer that took the process out would turn a delivery problem
//! into 503s for every provider. The counter
//! `hookinbox_storage_read_faults_total` is what an alert watches.

use std::sync::atomic::{AtomicI64, Ordering};

/// How long after the last fault readiness still names it: longer than a
/// deferred delivery waits (`retry_policy::STORAGE_FAULT_WAIT_MS`), so a
/// fault that persists is named without a gap.
pub const RECENT_MS: i64 = 60_000;

/// When the last storage read fault was seen.
#[derive(Debug, Default)]
pub struct StorageFaults {
    /// Unix milliseconds; 0: never.
    last_ms: AtomicI64,
}

impl StorageFaults {
    /// A worker could not read an event at `now_ms`.
    pub fn record(&self, now_ms: i64) {
        self.last_ms.fetch_max(now_ms, Ordering::Relaxed);
    }

    /// Whether a fault was seen within [`RECENT_MS`] before `now_ms`.
    pub fn recent(&self, now_ms: i64) -> bool {
        let last = self.last_ms.load(Ordering::Relaxed);
        last > 0 && now_ms.saturating_sub(last) <= RECENT_MS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_is_recent_for_a_minute_after_the_last_one() {
        let faults = StorageFaults::default();
        assert!(!faults.recent(1_000_000), "none seen");
        faults.record(1_000_000);
        assert!(faults.recent(1_000_000 + RECENT_MS));
        assert!(!faults.recent(1_000_001 + RECENT_MS));
        faults.record(1_030_000);
        assert!(faults.recent(1_000_001 + RECENT_MS), "the latest counts");
    }
}
