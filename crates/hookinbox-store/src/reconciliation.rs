//! What reconciliation reads and repairs (docs/architecture.md §7): a
//! capability of a store, not part of [`crate::Store`], so a store an
//! embedder gives need not have it. Both backends do; a store hands it out
//! through [`crate::Store::reconciliation`].

use std::collections::HashSet;

use async_trait::async_trait;

use crate::{AcceptOutcome, Drift, DriftQuery, DriftRepair, NewEvent, Repaired, StoreError};

/// Internal drift, and events a provider's API has that the inbox lacks.
#[async_trait]
pub trait Reconciliation: Send + Sync + 'static {
    /// Looks for internal drift (see [`crate::drift`]); reads only.
    async fn find_drift(&self, query: DriftQuery) -> Result<Drift, StoreError>;

    /// Repairs drift found by [`Reconciliation::find_drift`], each item
    /// guarded by the condition it was found in, in one transaction.
    async fn repair_drift(&self, repair: DriftRepair) -> Result<Repaired, StoreError>;

    /// Which of these provider event ids the endpoint has stored.
    async fn known_event_ids(
        &self,
        endpoint_id: &str,
        provider_event_ids: &[String],
    ) -> Result<HashSet<String>, StoreError>;

    /// Accepts an event a reconciliation source fetched from the
    /// provider's API (its webhook never arrived), as
    /// [`crate::Store::accept`] does — the same UNIQUE dedup, the same
    /// delivery rows — and marks a new row as fetched at `fetched_at_ms`
    /// (`inbox.fetched_at_ms`). Its body is the API's rendering of the
    /// event, not the webhook's bytes, so a signed webhook of the same id
    /// arriving later is answered as a duplicate of it, never as a
    /// conflict.
    async fn accept_fetched(
        &self,
        event: NewEvent,
        fetched_at_ms: i64,
    ) -> Result<AcceptOutcome, StoreError>;
}
