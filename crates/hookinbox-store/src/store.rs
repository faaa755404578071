//! The one seam between the service and its database.

use async_trait::async_trait;

use crate::{AcceptOutcome, NewEvent, Stats, StoreError};

/// Durable storage of the inbox. Every implementation passes the same
/// conformance tests (`tests/conformance.rs`).
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Accepts one verified event atomically under
    /// UNIQUE(endpoint_id, provider_event_id). Returns only after the commit
    /// that made it durable (or found it already durable) has returned.
    async fn accept(&self, event: NewEvent) -> Result<AcceptOutcome, StoreError>;

    /// Counts of inbox rows by endpoint and status.
    async fn stats(&self) -> Result<Stats, StoreError>;
}
