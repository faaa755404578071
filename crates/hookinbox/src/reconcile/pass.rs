//! One reconciliation pass: internal drift first, then each provider
//! source (see the module doc of `reconcile`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hookinbox_store::{
    AcceptOutcome, DriftQuery, DriftRepair, Fingerprint, NewEvent, Reconciliation, StoreError,
    UnsignedMetadata,
};
use hookinbox_verify::{Headers, Outcome, Request};

use super::report::{ProviderReport, Report, Unrepaired};
use super::sources::Sources;
use super::stripe::{SourceError, StripeSource};
use crate::config::Settings;
use crate::endpoint::{Endpoint, Endpoints};
use crate::routing::RoutedEvent;

/// The secret version recorded with a fetched event: no signature
/// verified it; the provider's API served it, over TLS, to the API key.
pub const FETCHED_SECRET_VERSION: &str = "api";

/// Ids asked for in one `known_event_ids` call.
const KNOWN_IDS_CHUNK: usize = 500;

/// Why a pass stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("storage: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Source(#[from] SourceError),
}

/// Where a pass is, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// Looking for drift in the store.
    Drift,
    /// Listing a provider's events: so many so far.
    Listing { endpoint: &'a str, listed: usize },
    /// Storing missing events: `done` of `of`.
    Storing {
        endpoint: &'a str,
        done: usize,
        of: usize,
    },
}

/// Runs passes over one store with one configuration.
pub struct Reconciler {
    store: Arc<dyn Reconciliation>,
    endpoints: Endpoints,
    sources: Sources,
    lookback: Duration,
    batch: usize,
    /// How long past its expiry a lease must be before it counts as stuck:
    /// the lease rescuer of a running worker takes expired leases within
    /// `delivery.rescue_interval`.
    lease_grace: Duration,
}

impl Reconciler {
    pub fn new(
        store: Arc<dyn Reconciliation>,
        settings: &Settings,
        endpoints: Endpoints,
        sources: Sources,
    ) -> Reconciler {
        Reconciler {
            store,
            endpoints,
            sources,
            lookback: settings.reconcile.lookback,
            batch: settings.reconcile.batch.get(),
            lease_grace: (settings.delivery.rescue_interval * 2).max(Duration::from_secs(30)),
        }
    }

    /// One pass at `now_ms`; with `fix`, repairs what is safe.
    pub async fn run(
        &self,
        fix: bool,
        now_ms: i64,
        mut progress: impl FnMut(Step<'_>),
    ) -> Result<Report, ReconcileError> {
        let mut report = Report {
            fix,
            ..Report::default()
        };
        progress(Step::Drift);
        self.drift(&mut report, now_ms).await?;
        for source in &self.sources.0 {
            let provider = self.provider(source, fix, now_ms, &mut progress).await?;
            report.providers.push(provider);
        }
        Ok(report)
    }

    async fn drift(&self, report: &mut Report, now_ms: i64) -> Result<(), StoreError> {
        let query = DriftQuery {
            expired_before_ms: now_ms.saturating_sub(millis(self.lease_grace)),
            accepted_since_ms: now_ms.saturating_sub(millis(self.lookback)),
            limit: self.batch,
        };
        let drift = self.store.find_drift(query).await?;
        let (repairable, orphaned): (Vec<_>, Vec<_>) = drift
            .missing_deliveries
            .iter()
            .cloned()
            .partition(|missing| {
                self.endpoints
                    .get(&missing.endpoint_id)
                    .is_some_and(|endpoint| {
                        endpoint.targets.iter().any(|t| t.name == missing.target)
                    })
            });
        report.expired_leases.found = drift.expired_leases.len() as u64;
        report.stale_statuses.found = drift.stale_statuses.len() as u64;
        report.missing_deliveries.found = drift.missing_deliveries.len() as u64;
        report.unrepaired = orphaned
            .into_iter()
            .map(|missing| Unrepaired {
                kind: "missing_delivery",
                inbox_id: missing.inbox_id,
                endpoint: missing.endpoint_id,
                target: missing.target,
                reason: "the endpoint no longer has this target",
            })
            .collect();
        let nothing_to_do = drift.expired_leases.is_empty()
            && drift.stale_statuses.is_empty()
            && repairable.is_empty();
        if !report.fix || nothing_to_do {
            return Ok(());
        }
        let repaired = self
            .store
            .repair_drift(DriftRepair {
                expired_before_ms: query.expired_before_ms,
                expired_leases: drift.expired_leases,
                stale_statuses: drift.stale_statuses,
                missing_deliveries: repairable,
                now_ms,
            })
            .await?;
        report.expired_leases.repaired = repaired.expired_leases;
        report.stale_statuses.repaired = repaired.stale_statuses;
        report.missing_deliveries.repaired = repaired.missing_deliveries;
        if repaired.missing_deliveries > 0 || repaired.expired_leases > 0 {
            for endpoint in self.endpoints.values() {
                endpoint.wake_targets();
            }
        }
        Ok(())
    }

    async fn provider(
        &self,
        source: &StripeSource,
        fix: bool,
        now_ms: i64,
        progress: &mut impl FnMut(Step<'_>),
    ) -> Result<ProviderReport, ReconcileError> {
        let endpoint_id = source.endpoint_id();
        let mut report = ProviderReport {
            endpoint: endpoint_id.to_owned(),
            ..ProviderReport::default()
        };
        let Some(endpoint) = self.endpoints.get(endpoint_id) else {
            return Ok(report);
        };
        let listed = source
            .list(now_ms / 1000, |listed| {
                progress(Step::Listing {
                    endpoint: endpoint_id,
                    listed,
                })
            })
            .await?;
        report.listed = listed.len() as u64;
        let mut candidates = Vec::new();
        for body in listed {
            match read_fetched(endpoint, &body) {
                Fetched::Event(envelope) => candidates.push((envelope, body)),
                Fetched::Ignored => report.ignored += 1,
                Fetched::Unreadable(why) => {
                    report.unreadable += 1;
                    tracing::warn!(
                        message = "A listed event has no envelope the endpoint reads; not stored.",
                        endpoint = %endpoint_id,
                        reason = %why
                    );
                }
            }
        }
        let ids: Vec<String> = candidates.iter().map(|(e, _)| e.event_id.clone()).collect();
        let mut known = std::collections::HashSet::new();
        for chunk in ids.chunks(KNOWN_IDS_CHUNK) {
            known.extend(self.store.known_event_ids(endpoint_id, chunk).await?);
        }
        let missing: Vec<_> = candidates
            .into_iter()
            .filter(|(envelope, _)| !known.contains(&envelope.event_id))
            .collect();
        report.missing = missing.len() as u64;
        if !fix {
            return Ok(report);
        }
        let of = missing.len();
        for (done, (envelope, body)) in missing.into_iter().enumerate() {
            progress(Step::Storing {
                endpoint: endpoint_id,
                done,
                of,
            });
            let event = fetched_event(endpoint, envelope, body, now_ms);
            if let AcceptOutcome::Inserted { .. } = self.store.accept_fetched(event, now_ms).await?
            {
                report.stored += 1;
            }
        }
        if report.stored > 0 {
            endpoint.wake_targets();
        }
        Ok(report)
    }
}

/// What the endpoint makes of a listed event.
enum Fetched {
    Event(hookinbox_verify::Envelope),
    /// A type the endpoint does not take.
    Ignored,
    Unreadable(String),
}

/// Reads a listed event as the endpoint's adapter reads a verified body
/// (one place knows a provider's envelope), with its type allowlist and
/// ordering pointers.
fn read_fetched(endpoint: &Endpoint, body: &[u8]) -> Fetched {
    let verifier = endpoint.verifier();
    let Some(version) = verifier.keys().versions().first() else {
        return Fetched::Unreadable("the endpoint has no secret version".into());
    };
    let headers = Headers::new();
    // The key is not used to read an envelope: the request is trusted as
    // the API's answer, not by a signature.
    match verifier
        .adapter()
        .envelope(&Request::new(&headers, body), &version.key)
    {
        Ok(Outcome::Event(mut envelope)) => {
            if !verifier.allows_type(envelope.event_type.as_deref()) {
                return Fetched::Ignored;
            }
            endpoint.apply_ordering(&mut envelope, body);
            Fetched::Event(envelope)
        }
        Ok(_) => Fetched::Ignored,
        Err(refusal) => Fetched::Unreadable(refusal.detail.to_string()),
    }
}

/// The event to store for a listed one: as ingress builds it, with the
/// API's bytes as its body and nothing taken from request headers.
fn fetched_event(
    endpoint: &Endpoint,
    envelope: hookinbox_verify::Envelope,
    body: Bytes,
    now_ms: i64,
) -> NewEvent {
    // Routed as ingress routes a webhook (docs/delivery.md, "Routing").
    let routing = endpoint.route(&RoutedEvent {
        provider: endpoint.provider,
        endpoint: &endpoint.id,
        id: &envelope.event_id,
        event_type: envelope.event_type.as_deref(),
        received_at_ms: now_ms,
        matched_secret_version: FETCHED_SECRET_VERSION,
        headers: &[],
        content_type: Some("application/json"),
        body: &body,
    });
    NewEvent {
        endpoint_id: endpoint.id.clone(),
        provider: endpoint.provider.to_owned(),
        provider_event_id: envelope.event_id,
        event_type: envelope.event_type,
        object_id: envelope.object_id,
        object_version: envelope.object_version,
        provider_created_at: envelope.created_at,
        received_at_ms: now_ms,
        content_type: Some("application/json".into()),
        fingerprint: Fingerprint::of(&body),
        payload: body,
        audit_headers: Vec::new(),
        matched_secret_version: FETCHED_SECRET_VERSION.into(),
        targets: routing.routed,
        not_routed: routing.not_routed,
        delays_ms: endpoint.target_delays_ms(),
        unsigned_metadata: UnsignedMetadata::default(),
        fingerprint_window_ms: endpoint.fingerprint_window_ms(),
        trace_parent: None,
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}
