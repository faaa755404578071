//! Delivery instrumentation.

use std::time::Duration;

/// How one delivery attempt was settled.
pub struct DeliveryOutcome<'a> {
    pub endpoint: &'a str,
    pub target: &'a str,
    /// `delivered`, `retry` or `dead` (as decided; a lost lease is logged by the settler).
    pub outcome: &'static str,
    pub elapsed: Duration,
}

impl DeliveryOutcome<'_> {
    pub fn emit(self) {
        metrics::counter!(
            "hookinbox_deliveries_total",
            "endpoint" => self.endpoint.to_owned(), "target" => self.target.to_owned(), "outcome" => self.outcome
        )
        .increment(1);
        metrics::histogram!(
            "hookinbox_delivery_attempt_duration_seconds",
            "endpoint" => self.endpoint.to_owned(), "target" => self.target.to_owned()
        )
        .record(self.elapsed.as_secs_f64());
    }
}

/// Expired leases returned to PENDING (a worker crashed or stalled).
pub struct LeasesReclaimed(pub u64);

impl LeasesReclaimed {
    pub fn emit(self) {
        metrics::counter!("hookinbox_lease_reclaims_total").increment(self.0);
        tracing::warn!(message = "Reclaimed expired leases.", reclaimed = self.0);
    }
}
