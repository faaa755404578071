//! The gauges the metrics sampler reads from the database
//! (`crate::metrics_sampler`): how far behind delivery is, per endpoint
//! and per target, and the inbox by status. Labels are the configured
//! endpoint and target names and the three statuses: bounded.

use hookinbox_store::{Backlog, InboxStatus};

/// One reading of the backlog at `now_ms`.
pub struct BacklogSampled<'a> {
    pub backlog: &'a Backlog,
    /// Every configured endpoint: one without a backlog reads 0.
    pub endpoints: &'a [String],
    pub now_ms: i64,
}

impl BacklogSampled<'_> {
    pub fn emit(self) {
        for endpoint in self.endpoints {
            let age = self
                .backlog
                .oldest_unprocessed_ms
                .get(endpoint)
                .map_or(0.0, |&received| seconds_since(received, self.now_ms));
            metrics::gauge!(
                "hookinbox_oldest_unprocessed_age_seconds",
                "endpoint" => endpoint.clone()
            )
            .set(age);
        }
        for target in &self.backlog.targets {
            let labels = [
                ("endpoint", target.endpoint_id.clone()),
                ("target", target.target.clone()),
            ];
            metrics::gauge!("hookinbox_delivery_backlog", &labels).set(target.open as f64);
            // Due once its time has come; a retry scheduled later is not late.
            let late = target
                .earliest_due_ms
                .map_or(0.0, |due| seconds_since(due, self.now_ms));
            metrics::gauge!("hookinbox_oldest_due_delivery_age_seconds", &labels).set(late);
        }
    }
}

/// Inbox rows with one status, over all endpoints.
pub struct InboxRowsCounted {
    pub status: InboxStatus,
    pub rows: u64,
}

impl InboxRowsCounted {
    pub fn emit(self) {
        metrics::gauge!("hookinbox_inbox_rows", "status" => self.status.as_str())
            .set(self.rows as f64);
    }
}

/// Seconds from `then_ms` to `now_ms`; 0 when `then_ms` is not past.
fn seconds_since(then_ms: i64, now_ms: i64) -> f64 {
    (now_ms.saturating_sub(then_ms).max(0) as f64) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_zero_until_their_instant_has_passed() {
        assert_eq!(seconds_since(10_000, 12_500), 2.5);
        assert_eq!(seconds_since(12_500, 12_500), 0.0);
        assert_eq!(seconds_since(20_000, 12_500), 0.0, "a retry not due yet");
    }
}
