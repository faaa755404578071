//! Delivery instrumentation.

use std::time::Duration;

use hookinbox_store::{LeasedDelivery, Settlement};

use super::ingress_events::millis;

/// How one delivery attempt was settled: counted, timed, and logged in one
/// line — INFO when delivered or to be retried, WARN once the delivery is
/// dead — with the settlement's error, which is masked already (a status
/// code, a timeout, a TLS failure: never a target's answer body or URL
/// credentials). A lost lease is logged by the settler.
///
/// A deferred delivery was not attempted: its event could not be read
/// from our own storage. That is a storage fault, not the target's: it
/// counts in `hookinbox_storage_read_faults_total` too, and its WARN line
/// names what failed (an inbox id, a key id, an I/O error; never bytes or
/// a key).
pub struct DeliveryOutcome<'a> {
    pub lease: &'a LeasedDelivery,
    pub settlement: &'a Settlement,
    /// When the settlement was decided: a retry's delay counts from it.
    pub now_ms: i64,
    /// How long the attempt took.
    pub elapsed: Duration,
}

impl DeliveryOutcome<'_> {
    pub fn emit(self) {
        let lease = self.lease;
        let outcome = match self.settlement {
            Settlement::Delivered => "delivered",
            Settlement::Retry { .. } => "retry",
            Settlement::Dead { .. } => "dead",
            Settlement::Cancelled { .. } => "cancelled",
            Settlement::Deferred { .. } => "deferred",
        };
        if let Settlement::Deferred { .. } = self.settlement {
            metrics::counter!("hookinbox_storage_read_faults_total").increment(1);
        }
        metrics::counter!(
            "hookinbox_deliveries_total",
            "endpoint" => lease.endpoint_id.clone(), "target" => lease.target.clone(), "outcome" => outcome
        )
        .increment(1);
        metrics::histogram!(
            "hookinbox_delivery_attempt_duration_seconds",
            "endpoint" => lease.endpoint_id.clone(), "target" => lease.target.clone()
        )
        .record(self.elapsed.as_secs_f64());
        let attempt = lease.attempts.saturating_add(1);
        let latency_ms = millis(self.elapsed);
        match self.settlement {
            Settlement::Delivered => tracing::info!(
                message = "Delivered an event.",
                inbox_id = %lease.inbox_id,
                endpoint = %lease.endpoint_id,
                target = %lease.target,
                outcome = %outcome,
                attempt,
                latency_ms,
                delivery = lease.delivery_id
            ),
            Settlement::Retry {
                error,
                next_attempt_at_ms,
            } => tracing::info!(
                message = "Delivery attempt failed; will retry.",
                inbox_id = %lease.inbox_id,
                endpoint = %lease.endpoint_id,
                target = %lease.target,
                outcome = %outcome,
                attempt,
                latency_ms,
                delivery = lease.delivery_id,
                %error,
                retry_in_ms = next_attempt_at_ms - self.now_ms
            ),
            Settlement::Cancelled { note } => tracing::info!(
                message = "Delivery cancelled by the target's transform; nothing was sent.",
                inbox_id = %lease.inbox_id,
                endpoint = %lease.endpoint_id,
                target = %lease.target,
                outcome = %outcome,
                attempt,
                latency_ms,
                delivery = lease.delivery_id,
                %note
            ),
            Settlement::Dead { error } => tracing::warn!(
                message = "Delivery dead after its retry budget.",
                inbox_id = %lease.inbox_id,
                endpoint = %lease.endpoint_id,
                target = %lease.target,
                outcome = %outcome,
                attempt,
                latency_ms,
                delivery = lease.delivery_id,
                %error
            ),
            Settlement::Deferred {
                error,
                next_attempt_at_ms,
            } => tracing::warn!(
                message = "Storage read fault: the event could not be read; the delivery waits, no attempt charged.",
                inbox_id = %lease.inbox_id,
                endpoint = %lease.endpoint_id,
                target = %lease.target,
                outcome = %outcome,
                delivery = lease.delivery_id,
                %error,
                retry_in_ms = next_attempt_at_ms - self.now_ms
            ),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::captured_log::capture;

    fn lease(attempts: u32) -> LeasedDelivery {
        LeasedDelivery {
            delivery_id: 12,
            inbox_id: "0193f1c2-0000-7000-8000-00000000000a".into(),
            endpoint_id: "stripe".into(),
            target: "ledger".into(),
            owner: "worker-1".into(),
            attempts,
            created_at_ms: 1_000,
            lease_until_ms: 31_000,
            ordered: false,
        }
    }

    fn log(attempts: u32, settlement: Settlement) -> String {
        capture(|| {
            DeliveryOutcome {
                lease: &lease(attempts),
                settlement: &settlement,
                now_ms: 5_000,
                elapsed: Duration::from_micros(42_500),
            }
            .emit()
        })
    }

    const IDS: &str = "inbox_id=0193f1c2-0000-7000-8000-00000000000a endpoint=stripe target=ledger";

    #[test]
    fn a_delivery_is_one_info_line() {
        assert_eq!(
            log(0, Settlement::Delivered),
            format!(
                " INFO hookinbox::telemetry::delivery_events: Delivered an event. {IDS} \
                 outcome=delivered attempt=1 latency_ms=42.5 delivery=12\n"
            )
        );
    }

    #[test]
    fn a_failed_attempt_is_one_info_line_with_its_error_and_the_next_try() {
        let settlement = Settlement::Retry {
            next_attempt_at_ms: 6_500,
            error: "http 503".into(),
        };
        assert_eq!(
            log(2, settlement),
            format!(
                " INFO hookinbox::telemetry::delivery_events: Delivery attempt failed; will retry. \
                 {IDS} outcome=retry attempt=3 latency_ms=42.5 delivery=12 error=http 503 \
                 retry_in_ms=1500\n"
            )
        );
    }

    #[test]
    fn a_dead_delivery_is_one_warn_line_with_its_error() {
        let settlement = Settlement::Dead {
            error: "permanent: http 422".into(),
        };
        assert_eq!(
            log(4, settlement),
            format!(
                " WARN hookinbox::telemetry::delivery_events: Delivery dead after its retry budget. \
                 {IDS} outcome=dead attempt=5 latency_ms=42.5 delivery=12 \
                 error=permanent: http 422\n"
            )
        );
    }

    #[test]
    fn a_storage_read_fault_is_one_warn_line_without_an_attempt() {
        let settlement = Settlement::Deferred {
            next_attempt_at_ms: 10_000,
            error: "storage unavailable: payload of x: No such file or directory".into(),
        };
        assert_eq!(
            log(1, settlement),
            format!(
                " WARN hookinbox::telemetry::delivery_events: Storage read fault: the event could \
                 not be read; the delivery waits, no attempt charged. {IDS} outcome=deferred \
                 delivery=12 error=storage unavailable: payload of x: No such file or directory \
                 retry_in_ms=5000\n"
            )
        );
    }
}
