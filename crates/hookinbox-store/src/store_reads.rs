//! The operator-read sibling of [`crate::Store`]: what the CLI and the
//! admin API read (`events list|show`, `stats`, readiness). A sibling, not
//! part of `Store`, because a read-only process (the CLI) opens a reader
//! without a writer: for SQLite no writer thread and no migration, for
//! PostgreSQL no ingress batcher.

use async_trait::async_trait;
use bytes::Bytes;

use crate::{
    EventDetail, EventFilter, EventPage, Overview, OverviewQuery, Stats, StoreError, StreamCursor,
    StreamedEvent, TargetGateView,
};

/// Reads for operators. Every implementation passes the same conformance
/// tests (`tests/it/conformance.rs`).
#[async_trait]
pub trait StoreReads: Send + Sync + 'static {
    /// Events matching `filter`, newest first, one page at a time.
    async fn list_events(&self, filter: &EventFilter) -> Result<EventPage, StoreError>;

    /// One event with its deliveries and their attempts; its raw body too
    /// when `with_payload` (checked against its fingerprint). `None` when
    /// no such event exists.
    async fn show_event(
        &self,
        inbox_id: &str,
        with_payload: bool,
    ) -> Result<Option<(EventDetail, Option<Bytes>)>, StoreError>;

    /// The request headers kept for audit with an event (opened with the
    /// key that sealed them, where they are sealed). `None` when no such
    /// event exists.
    async fn audit_headers(
        &self,
        inbox_id: &str,
    ) -> Result<Option<Vec<(String, String)>>, StoreError>;

    /// Inbox rows by endpoint and status (and bytes on disk where the
    /// backend can tell).
    async fn stats(&self) -> Result<Stats, StoreError>;

    /// The dashboard's overview: arrivals, backlog and failures of the
    /// endpoints and targets asked for, each count bounded (see
    /// [`crate::overview`]).
    async fn overview(&self, query: &OverviewQuery) -> Result<Overview, StoreError>;

    /// Where a stream of `endpoint_id`'s accepted events starts (see
    /// [`crate::event_stream`]): after everything committed so far, or,
    /// with `since_ms`, before the first event received at or after it.
    async fn stream_start(
        &self,
        endpoint_id: &str,
        since_ms: Option<i64>,
    ) -> Result<StreamCursor, StoreError>;

    /// Up to `limit` of the endpoint's accepted events after `after`, in
    /// stream order. An event never appears behind a cursor this returned.
    async fn stream_after(
        &self,
        endpoint_id: &str,
        after: &StreamCursor,
        limit: usize,
    ) -> Result<Vec<StreamedEvent>, StoreError>;

    /// A cheap round trip: `Ok` when the database answers.
    async fn ping(&self) -> Result<(), StoreError>;

    /// Every target with a gate row (paused once, rate-limited, or with a
    /// breaker; see [`crate::target_gate`]), by endpoint and name. A target
    /// without one is closed and not paused.
    async fn target_gates(&self) -> Result<Vec<TargetGateView>, StoreError>;
}
