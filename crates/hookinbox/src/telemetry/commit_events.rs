//! What ingress sees of its commits going wrong. Under storage trouble
//! every request fails the same way (a full disk refuses them all), so the
//! log lines go through a [`RefusalLog`]: a burst, then a few per second,
//! each saying how many were suppressed. The counters see every one.

use std::time::Duration;

use hookinbox_store::StoreError;

use crate::ingress::refusal_log::RefusalLog;

/// A commit that had not finished within `storage.commit_timeout`; the
/// request was answered 503 and its outcome is unknown.
pub struct CommitTimedOut<'a> {
    pub endpoint: &'a str,
    pub timeout: Duration,
}

impl CommitTimedOut<'_> {
    pub fn emit(self, log: &RefusalLog) {
        metrics::counter!(
            "hookinbox_commit_timeouts_total",
            "endpoint" => self.endpoint.to_owned()
        )
        .increment(1);
        if let Some(suppressed) = log.admit() {
            tracing::warn!(
                message = "Commit did not finish within storage.commit_timeout; answered 503.",
                endpoint = %self.endpoint,
                timeout_ms = self.timeout.as_millis() as u64,
                suppressed_since_last_line = suppressed
            );
        }
    }
}

/// A commit that failed (disk full, I/O error, commit queue full); the
/// request was answered 503. Counted with the other refusals
/// (`hookinbox_ingress_requests_total`, reason `unavailable`); a full
/// commit queue (the writer cannot keep up: the lock-contention signal) is
/// also counted apart, `hookinbox_commit_queue_full_total{endpoint}`.
pub struct CommitFailed<'a> {
    pub endpoint: &'a str,
    pub error: &'a StoreError,
}

impl CommitFailed<'_> {
    pub fn emit(self, log: &RefusalLog) {
        if matches!(self.error, StoreError::Overloaded) {
            metrics::counter!(
                "hookinbox_commit_queue_full_total",
                "endpoint" => self.endpoint.to_owned()
            )
            .increment(1);
        }
        if let Some(suppressed) = log.admit() {
            tracing::error!(
                message = "Could not commit an event; answered 503.",
                endpoint = %self.endpoint,
                error = %self.error,
                suppressed_since_last_line = suppressed
            );
        }
    }
}

/// Writes waiting for a commit right now (`hookinbox_commit_queue_depth`),
/// read from the store when `/metrics` is scraped: a queue's depth between
/// two samples says little, so it is read at the moment Prometheus asks.
pub struct CommitQueueDepth(pub usize);

impl CommitQueueDepth {
    pub fn emit(self) {
        metrics::gauge!("hookinbox_commit_queue_depth").set(self.0 as f64);
    }
}
