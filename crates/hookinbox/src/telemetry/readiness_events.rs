//! `hookinbox_readiness_check_failing{check}`: 1 while a `/readyz` check
//! fails, 0 while it passes, so Prometheus sees readiness without probing
//! it (`deploy/prometheus/alerts.yml`). Set by every check: each `/readyz`
//! and a periodic one (`metrics.sample_interval`) while an admin listener
//! runs. Only the checks this process runs have a series.

/// The checks a [`crate::admin::Readiness`] runs, and which of them failed.
pub struct ReadinessChecked<'a> {
    pub checked: &'a [&'static str],
    pub failing: &'a [&'static str],
}

impl ReadinessChecked<'_> {
    pub fn emit(self) {
        for check in self.checked {
            let failing = if self.failing.contains(check) {
                1.0
            } else {
                0.0
            };
            metrics::gauge!("hookinbox_readiness_check_failing", "check" => *check).set(failing);
        }
    }
}
