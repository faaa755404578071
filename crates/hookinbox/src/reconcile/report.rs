//! What one reconciliation pass found and did, for `hookinbox reconcile`
//! (a summary, or `--json`) and for the metrics of the background pass.

use serde::Serialize;

use crate::telemetry::ReconcileCounts;

/// One pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Whether repairs were made (`--fix`, the background pass), or only
    /// looked for.
    pub fix: bool,
    /// Deliveries LEASED past their lease's expiry (and its grace).
    pub expired_leases: Found,
    /// ACCEPTED events none of whose deliveries is open.
    pub stale_statuses: Found,
    /// Delivery rows missing for a target the event was accepted with.
    pub missing_deliveries: Found,
    /// Per endpoint with a provider source: the events listed and missing.
    pub providers: Vec<ProviderReport>,
    /// What was found and cannot be repaired, item by item.
    pub unrepaired: Vec<Unrepaired>,
}

/// Items of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Found {
    pub found: u64,
    pub repaired: u64,
}

/// One provider source's pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProviderReport {
    pub endpoint: String,
    /// Events the provider listed within the lookback.
    pub listed: u64,
    /// Of those, of a type the endpoint does not take (not stored).
    pub ignored: u64,
    /// Of those, without the envelope the endpoint reads (no id): not
    /// stored, and logged.
    pub unreadable: u64,
    /// Of the rest, the inbox did not have.
    pub missing: u64,
    /// Of those, stored now (with `fix`; a webhook arriving meanwhile makes
    /// one a duplicate instead).
    pub stored: u64,
}

/// An item left as it is, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unrepaired {
    pub kind: &'static str,
    pub inbox_id: String,
    pub endpoint: String,
    pub target: String,
    pub reason: &'static str,
}

impl Report {
    /// The counts the metrics carry, by kind (`telemetry::KINDS`).
    pub fn counts(&self) -> ReconcileCounts {
        let stored: u64 = self.providers.iter().map(|p| p.stored).sum();
        let missing: u64 = self.providers.iter().map(|p| p.missing).sum();
        let left = |found: Found| found.found.saturating_sub(found.repaired);
        ReconcileCounts {
            repaired: [
                self.expired_leases.repaired,
                self.stale_statuses.repaired,
                self.missing_deliveries.repaired,
                stored,
            ],
            unrepaired: [
                left(self.expired_leases),
                left(self.stale_statuses),
                left(self.missing_deliveries),
                missing.saturating_sub(stored),
            ],
        }
    }

    /// The one-line summary `hookinbox reconcile` prints.
    pub fn summary(&self) -> String {
        let verb = if self.fix { "repaired" } else { "to repair" };
        let kind = |name: &str, found: Found| {
            if self.fix {
                format!("{name} {} found, {} {verb}", found.found, found.repaired)
            } else {
                format!("{name} {}", found.found)
            }
        };
        let mut parts = vec![
            kind("expired leases", self.expired_leases),
            kind("stale statuses", self.stale_statuses),
            kind("missing deliveries", self.missing_deliveries),
        ];
        for provider in &self.providers {
            parts.push(format!(
                "{}: {} listed, {} missing, {} stored",
                provider.endpoint, provider.listed, provider.missing, provider.stored
            ));
        }
        if !self.unrepaired.is_empty() {
            parts.push(format!("{} left as they are", self.unrepaired.len()));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::ReconcileCounts;

    #[test]
    fn what_is_found_and_not_repaired_is_counted_as_unrepaired() {
        let report = Report {
            fix: true,
            expired_leases: Found {
                found: 2,
                repaired: 2,
            },
            stale_statuses: Found {
                found: 1,
                repaired: 0,
            },
            missing_deliveries: Found {
                found: 3,
                repaired: 1,
            },
            providers: vec![ProviderReport {
                endpoint: "stripe".into(),
                listed: 120,
                ignored: 0,
                unreadable: 0,
                missing: 50,
                stored: 49,
            }],
            unrepaired: Vec::new(),
        };
        let counts = report.counts();
        assert_eq!(counts.repaired, [2, 0, 1, 49]);
        assert_eq!(counts.unrepaired, [0, 1, 2, 1]);
        assert_eq!(
            report.summary(),
            "expired leases 2 found, 2 repaired; stale statuses 1 found, 0 repaired; \
             missing deliveries 3 found, 1 repaired; stripe: 120 listed, 50 missing, 49 stored"
        );
        assert_eq!(Report::default().counts(), ReconcileCounts::default());
    }
}
