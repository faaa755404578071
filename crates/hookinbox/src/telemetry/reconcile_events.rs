//! What a reconciliation pass found and did: repaired items counted by
//! kind (`hookinbox_reconcile_repaired_total{kind}`), items found and left
//! as they are in the last pass (`hookinbox_reconcile_unrepaired{kind}`, a
//! gauge: an item that stays wrong is reported again every pass), and the
//! pass itself (`hookinbox_reconcile_runs_total{outcome}`). One INFO line
//! when a pass found anything, a WARN when it left something.

/// The kinds of drift and of provider gaps, as labels (a closed set).
pub const KINDS: [&str; 4] = [
    "expired_lease",
    "stale_status",
    "missing_delivery",
    "provider_event",
];

/// Counts of one pass, by kind (indexed as [`KINDS`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReconcileCounts {
    pub repaired: [u64; 4],
    pub unrepaired: [u64; 4],
}

/// One background pass that completed.
pub struct Reconciled(pub ReconcileCounts);

impl Reconciled {
    pub fn emit(self) {
        let counts = self.0;
        for (index, kind) in KINDS.iter().enumerate() {
            metrics::counter!("hookinbox_reconcile_repaired_total", "kind" => *kind)
                .increment(counts.repaired[index]);
            metrics::gauge!("hookinbox_reconcile_unrepaired", "kind" => *kind)
                .set(counts.unrepaired[index] as f64);
        }
        metrics::counter!("hookinbox_reconcile_runs_total", "outcome" => "ok").increment(1);
        let repaired: u64 = counts.repaired.iter().sum();
        let unrepaired: u64 = counts.unrepaired.iter().sum();
        let [expired, stale, missing, fetched] = counts.repaired;
        if unrepaired > 0 {
            tracing::warn!(
                message = "Reconciliation left items it cannot repair; see `hookinbox reconcile`.",
                repaired,
                unrepaired,
                missing_deliveries_left = counts.unrepaired[2]
            );
        } else if repaired > 0 {
            tracing::info!(
                message = "Reconciliation repaired drift.",
                expired_leases = expired,
                stale_statuses = stale,
                missing_deliveries = missing,
                fetched_events = fetched
            );
        }
    }
}

/// A background pass that could not finish (the store or a provider's API
/// failed); the next one tries again.
pub struct ReconcileFailed<'a> {
    pub error: &'a dyn std::fmt::Display,
}

impl ReconcileFailed<'_> {
    pub fn emit(self) {
        metrics::counter!("hookinbox_reconcile_runs_total", "outcome" => "error").increment(1);
        tracing::warn!(
            message = "Reconciliation failed; retrying at the next interval.",
            error = %self.error
        );
    }
}
