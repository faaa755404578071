//! Ingress instrumentation.

use std::time::Duration;

/// How one ingress request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngressOutcome {
    Accepted,
    Duplicate,
    Ignored,
    Handshake,
    /// Refused, with its reason from the closed set (conflict included).
    Rejected(&'static str),
}

impl IngressOutcome {
    fn labels(self) -> (&'static str, &'static str) {
        match self {
            IngressOutcome::Accepted => ("accepted", ""),
            IngressOutcome::Duplicate => ("duplicate", ""),
            IngressOutcome::Ignored => ("ignored", "unsupported_type"),
            IngressOutcome::Handshake => ("handshake", ""),
            IngressOutcome::Rejected(reason) => ("rejected", reason),
        }
    }

    /// Counts the request and records its time to acknowledgement.
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
    }
}

/// A request verified under one secret version (watch the old version's
/// count fall to zero before retiring it).
pub struct SecretVersionMatched<'a> {
    pub endpoint: &'a str,
    pub version: &'a str,
}

impl SecretVersionMatched<'_> {
    pub fn emit(self) {
        metrics::counter!(
            "hookinbox_secret_version_matches_total",
            "endpoint" => self.endpoint.to_owned(), "version" => self.version.to_owned()
        )
        .increment(1);
    }
}
