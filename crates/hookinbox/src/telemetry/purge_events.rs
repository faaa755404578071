//! What one retention purge run removed: `hookinbox_purged_total{kind}`
//! and one INFO line, only when it removed something.

use hookinbox_store::PurgeCounts;

/// The totals of one purge run (all its batches).
#[derive(Debug, Clone, Copy, Default)]
pub struct Purged {
    /// Items removed, rule by rule.
    pub counts: PurgeCounts,
    /// SQLite payload segments deleted because no row references them.
    pub segments_deleted: u64,
}

impl Purged {
    /// Adds one batch's counts.
    pub fn add(&mut self, batch: &PurgeCounts, segments_deleted: u64) {
        self.counts.raw_payloads += batch.raw_payloads;
        self.counts.events += batch.events;
        self.counts.dead_deliveries += batch.dead_deliveries;
        self.segments_deleted += segments_deleted;
    }

    pub fn emit(self) {
        let PurgeCounts {
            raw_payloads,
            events,
            dead_deliveries,
        } = self.counts;
        for (kind, count) in [
            ("raw_payloads", raw_payloads),
            ("events", events),
            ("dead_deliveries", dead_deliveries),
        ] {
            metrics::counter!("hookinbox_purged_total", "kind" => kind).increment(count);
        }
        if !self.counts.is_empty() || self.segments_deleted > 0 {
            tracing::info!(
                message = "Purged under the retention rules.",
                raw_payloads,
                events,
                dead_deliveries,
                segments_deleted = self.segments_deleted,
            );
        }
    }
}
