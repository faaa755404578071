//! One endpoint's metric handles for the outcomes of nearly every request
//! (accepted, duplicate) and for its secret versions, registered on first
//! use and kept with the endpoint.
//!
//! `metrics::counter!` with labels builds the label strings and looks the
//! series up in the recorder's registry on every call; a kept handle is one
//! atomic add (bench/RESULTS.md, section 0f). Handles are taken on first
//! use, not when the endpoint is built, so they belong to the recorder
//! installed by then (`serve` installs it before it listens). Other
//! outcomes (refusals, with their reasons) are rare enough to go through
//! the registry ([`super::IngressOutcome::emit`]).

use std::sync::{OnceLock, RwLock};

use metrics::{Counter, Histogram};

/// The handles of one endpoint.
#[derive(Debug)]
pub struct EndpointMetrics {
    endpoint: String,
    accepted: OnceLock<OutcomeHandles>,
    duplicate: OnceLock<OutcomeHandles>,
    /// `hookinbox_secret_version_matches_total` by version name: an
    /// endpoint has a few versions, so a list.
    secret_versions: RwLock<Vec<(String, Counter)>>,
}

/// The request counter and the ack-time histogram of one outcome.
#[derive(Debug)]
pub(super) struct OutcomeHandles {
    pub(super) requests: Counter,
    pub(super) ack_seconds: Histogram,
}

impl EndpointMetrics {
    pub fn new(endpoint: &str) -> EndpointMetrics {
        EndpointMetrics {
            endpoint: endpoint.to_owned(),
            accepted: OnceLock::new(),
            duplicate: OnceLock::new(),
            secret_versions: RwLock::new(Vec::new()),
        }
    }

    /// The endpoint id, the `endpoint` label.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The handles of an accepted event, new (`duplicate: false`) or not.
    pub(super) fn accepted(&self, duplicate: bool) -> &OutcomeHandles {
        let (cell, outcome) = match duplicate {
            false => (&self.accepted, "accepted"),
            true => (&self.duplicate, "duplicate"),
        };
        cell.get_or_init(|| OutcomeHandles {
            requests: metrics::counter!(
                "hookinbox_ingress_requests_total",
                "endpoint" => self.endpoint.clone(), "outcome" => outcome, "reason" => ""
            ),
            ack_seconds: metrics::histogram!(
                "hookinbox_ack_duration_seconds",
                "endpoint" => self.endpoint.clone(), "outcome" => outcome
            ),
        })
    }

    /// Counts one request verified under secret `version`.
    pub(super) fn count_secret_version(&self, version: &str) {
        // A poisoned lock only means a panic elsewhere while it was held;
        // the list is whole at every step.
        {
            let list = self
                .secret_versions
                .read()
                .unwrap_or_else(|e| e.into_inner());
            if let Some((_, counter)) = list.iter().find(|(name, _)| name == version) {
                counter.increment(1);
                return;
            }
        }
        let mut list = self
            .secret_versions
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((_, counter)) = list.iter().find(|(name, _)| name == version) {
            counter.increment(1);
            return;
        }
        let counter = metrics::counter!(
            "hookinbox_secret_version_matches_total",
            "endpoint" => self.endpoint.clone(), "version" => version.to_owned()
        );
        counter.increment(1);
        list.push((version.to_owned(), counter));
    }
}
