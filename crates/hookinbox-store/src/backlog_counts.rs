//! The backlog reads `serve` samples into `/metrics` (docs/architecture.md
//! §7): a capability of a store, not part of [`crate::Store`], so a store an
//! embedder gives need not have it. Both backends do; a store hands it out
//! through [`crate::Store::backlog_counts`].

use async_trait::async_trait;

use crate::{Backlog, InboxStatus, StoreError, TargetRef};

/// Counts of what is left to do, cheap enough to sample every few seconds.
#[async_trait]
pub trait BacklogCounts: Send + Sync + 'static {
    /// The backlog of these endpoints and targets (see [`Backlog`]): index
    /// range scans that follow the backlog, not the inbox.
    async fn backlog(
        &self,
        endpoints: &[String],
        targets: &[TargetRef],
    ) -> Result<Backlog, StoreError>;

    /// Inbox rows with this status, over all endpoints. Its cost follows
    /// the number of such rows (an index range count): cheap for ACCEPTED
    /// and FAILED, proportional to the inbox for PROCESSED.
    async fn count_by_status(&self, status: InboxStatus) -> Result<u64, StoreError>;
}
