//! What every kind of target is to a worker: one attempt at one leased
//! delivery. The worker leases, heartbeats, applies the retry policy and
//! settles; a [`Destination`] only says how the attempt ended, so adding a
//! kind of target is one implementation of this trait and one variant of
//! `config::TargetKind`.

use async_trait::async_trait;
use hookinbox_store::{LeasedDelivery, StoredEvent};

use super::reshape::RequestOverrides;
use super::retry_policy::AttemptOutcome;

/// Where a target's events go: an HTTP service (`http_target`), a
/// JetStream stream (`nats_target`), or a library handler bound to the
/// store it commits through (`handler_target`).
#[async_trait]
pub trait Destination: Send + Sync + std::fmt::Debug {
    /// One attempt at delivering `event`, leased as `lease`. Errors in the
    /// outcome are described without URLs, bodies or secrets.
    async fn attempt(&self, lease: &LeasedDelivery, event: StoredEvent) -> AttemptResult;

    /// An attempt at `event` as a transform reshaped it: its payload and
    /// `Content-Type` are what to send; `overrides` (method, URL, added
    /// headers) are honoured by kinds that send HTTP requests and
    /// ignored by the others, which have no such thing
    /// (docs/delivery.md, "Transformations").
    async fn attempt_with(
        &self,
        lease: &LeasedDelivery,
        event: StoredEvent,
        overrides: &RequestOverrides,
    ) -> AttemptResult {
        let _ = overrides;
        self.attempt(lease, event).await
    }
}

/// How one attempt ended, for the worker.
#[derive(Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// To be recorded by the settler through the retry policy: every HTTP
    /// and NATS attempt, and a handler attempt that did not apply.
    ToSettle(AttemptOutcome),
    /// A handler applied its change and DELIVERED in one commit.
    Committed,
    /// The lease had been reclaimed before the handler ran; the current
    /// holder delivers it.
    LeaseLost,
}

impl From<AttemptOutcome> for AttemptResult {
    /// An outcome still to be settled.
    fn from(outcome: AttemptOutcome) -> AttemptResult {
        AttemptResult::ToSettle(outcome)
    }
}
