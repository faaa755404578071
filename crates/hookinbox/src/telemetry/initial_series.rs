//! Counters recorded as 0 at start-up, for every configured endpoint and
//! target: a series that first appears at its first increment makes
//! `increase()` miss that increment (there is no earlier sample), so the
//! dead-letter alert and the dashboard's 503 and delivery panels would
//! start late. The label values are the configuration's, so the set is
//! bounded.

use crate::endpoint::Endpoints;

/// The configured endpoints and their targets.
pub struct InitialSeries<'a>(pub &'a Endpoints);

impl InitialSeries<'_> {
    pub fn emit(self) {
        for endpoint in self.0.values() {
            for name in [
                "hookinbox_commit_queue_full_total",
                "hookinbox_commit_timeouts_total",
            ] {
                metrics::counter!(name, "endpoint" => endpoint.id.clone()).increment(0);
            }
            for target in &endpoint.targets {
                if target.route.filter.is_some() {
                    metrics::counter!(
                        "hookinbox_filter_errors_total",
                        "endpoint" => endpoint.id.clone(), "target" => target.name.clone()
                    )
                    .increment(0);
                }
                for outcome in ["delivered", "retry", "dead"] {
                    metrics::counter!(
                        "hookinbox_deliveries_total",
                        "endpoint" => endpoint.id.clone(), "target" => target.name.clone(),
                        "outcome" => outcome
                    )
                    .increment(0);
                }
            }
        }
        metrics::counter!("hookinbox_lease_reclaims_total").increment(0);
        metrics::counter!("hookinbox_storage_read_faults_total").increment(0);
        for kind in super::reconcile_events::KINDS {
            metrics::counter!("hookinbox_reconcile_repaired_total", "kind" => kind).increment(0);
        }
    }
}
