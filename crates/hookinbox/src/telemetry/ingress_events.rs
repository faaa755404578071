//! Ingress instrumentation.

use std::time::Duration;

use super::EndpointMetrics;

/// How one ingress request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IngressOutcome {
    /// Answered 200 `accepted`: committed now, or found committed already.
    Accepted(AcceptedEvent),
    Ignored,
    Handshake,
    /// Refused, with its reason from the closed set (conflict included).
    Rejected(&'static str),
}

/// An event ingress acknowledged as durably accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedEvent {
    pub inbox_id: String,
    pub provider_event_id: String,
    /// Found committed already: a provider's retry, answered as a duplicate.
    pub duplicate: bool,
}

impl IngressOutcome {
    /// The outcome and reason labels of the request's metrics.
    pub fn labels(&self) -> (&'static str, &'static str) {
        match self {
            IngressOutcome::Accepted(AcceptedEvent {
                duplicate: false, ..
            }) => ("accepted", ""),
            IngressOutcome::Accepted(AcceptedEvent {
                duplicate: true, ..
            }) => ("duplicate", ""),
            IngressOutcome::Ignored => ("ignored", "unsupported_type"),
            IngressOutcome::Handshake => ("handshake", ""),
            IngressOutcome::Rejected(reason) => ("rejected", reason),
        }
    }

    /// Counts the request and records its time to acknowledgement; an
    /// accepted event also gets its log line, the trace an operator follows
    /// from a provider's event id to the inbox id. Names and numbers only:
    /// never the payload, a header or a secret. (Refusals are logged where
    /// they are decided, bounded by a `RefusalLog`.)
    pub fn emit(self, endpoint: &str, elapsed: Duration) {
        let (outcome, reason) = self.labels();
        metrics::counter!(
            "hookinbox_ingress_requests_total",
            "endpoint" => endpoint.to_owned(), "outcome" => outcome, "reason" => reason
        )
        .increment(1);
        metrics::histogram!(
            "hookinbox_ack_duration_seconds",
            "endpoint" => endpoint.to_owned(), "outcome" => outcome
        )
        .record(elapsed.as_secs_f64());
        self.log(endpoint, elapsed);
    }

    /// As [`IngressOutcome::emit`] for a configured endpoint: an accepted
    /// event is counted through the endpoint's kept handles.
    pub fn emit_for(self, metrics: &EndpointMetrics, elapsed: Duration) {
        let IngressOutcome::Accepted(event) = &self else {
            return self.emit(metrics.endpoint(), elapsed);
        };
        let handles = metrics.accepted(event.duplicate);
        handles.requests.increment(1);
        handles.ack_seconds.record(elapsed.as_secs_f64());
        self.log(metrics.endpoint(), elapsed);
    }

    fn log(self, endpoint: &str, elapsed: Duration) {
        if let IngressOutcome::Accepted(event) = self {
            tracing::info!(
                message = "Accepted an event.",
                inbox_id = %event.inbox_id,
                endpoint = %endpoint,
                event_id = %event.provider_event_id,
                duplicate = event.duplicate,
                ack_ms = millis(elapsed)
            );
        }
    }
}

/// Milliseconds with microsecond precision, as log lines show latencies.
pub(super) fn millis(elapsed: Duration) -> f64 {
    elapsed.as_micros() as f64 / 1000.0
}

/// A request verified under one secret version (watch the old version's
/// count fall to zero before retiring it).
pub struct SecretVersionMatched<'a> {
    pub endpoint: &'a EndpointMetrics,
    pub version: &'a str,
}

impl SecretVersionMatched<'_> {
    pub fn emit(self) {
        self.endpoint.count_secret_version(self.version);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::captured_log::capture;

    fn accepted(duplicate: bool) -> IngressOutcome {
        IngressOutcome::Accepted(AcceptedEvent {
            inbox_id: "0193f1c2-0000-7000-8000-00000000000a".into(),
            provider_event_id: "evt_1".into(),
            duplicate,
        })
    }

    #[test]
    fn an_accepted_event_is_one_info_line_with_its_ids_and_ack_time() {
        let log = capture(|| accepted(false).emit("stripe", Duration::from_micros(1_250)));
        assert_eq!(
            log,
            " INFO hookinbox::telemetry::ingress_events: Accepted an event. \
             inbox_id=0193f1c2-0000-7000-8000-00000000000a endpoint=stripe \
             event_id=evt_1 duplicate=false ack_ms=1.25\n"
        );
        let log = capture(|| accepted(true).emit("stripe", Duration::from_millis(2)));
        assert!(log.contains(" duplicate=true ack_ms=2.0\n"), "{log}");
    }

    #[test]
    fn other_outcomes_leave_no_line_here() {
        for outcome in [
            IngressOutcome::Ignored,
            IngressOutcome::Handshake,
            IngressOutcome::Rejected("signature"),
        ] {
            assert_eq!(capture(|| outcome.emit("stripe", Duration::ZERO)), "");
        }
    }
}
