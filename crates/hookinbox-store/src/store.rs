//! The one seam between the service and its database. What not every
//! store need have is a capability of its own ([`BacklogCounts`],
//! [`Reconciliation`]), handed out by an accessor that answers `None` by
//! default.

use async_trait::async_trait;

use std::sync::Arc;

use crate::{
    AcceptOutcome, BacklogCounts, DeliveryWakeups, LearnedSecrets, LeaseParams, LeasedDelivery,
    LeasedEvent, NewEvent, Reconciliation, ReplaySelector, SettleRequest, Settlement, Stats,
    StoreError, StoredEvent, TargetGates,
};

/// Durable storage of the inbox and its outbox. Every implementation passes
/// the same conformance tests (`tests/it/conformance.rs`).
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Accepts one verified event atomically under
    /// UNIQUE(endpoint_id, provider_event_id), with one delivery row per
    /// target in the same transaction. Returns only after the commit that
    /// made it durable (or found it already durable) has returned.
    /// Dropping the future (a deadline) leaves the outcome unknown, never
    /// half-written: the event is committed whole or not at all.
    async fn accept(&self, event: NewEvent) -> Result<AcceptOutcome, StoreError>;

    /// Leases due deliveries of one target (see `LeaseParams`).
    async fn lease(&self, params: LeaseParams) -> Result<Vec<LeasedDelivery>, StoreError>;

    /// Leases as [`Store::lease`] does and reads each leased delivery's
    /// event, as [`Store::load_event`] would, for the worker that sends it.
    /// The default reads them one by one after the lease, for backends
    /// where a read is cheap (SQLite reads in-process).
    async fn lease_events(&self, params: LeaseParams) -> Result<Vec<LeasedEvent>, StoreError> {
        let leased = self.lease(params).await?;
        let mut with_events = Vec::with_capacity(leased.len());
        for lease in leased {
            let event = self.load_event(&lease.inbox_id).await;
            with_events.push(LeasedEvent { lease, event });
        }
        Ok(with_events)
    }

    /// Extends a lease; `false` when it is no longer held.
    async fn heartbeat(&self, lease: &LeasedDelivery, until_ms: i64) -> Result<bool, StoreError>;

    /// Records an attempt's outcome; `false` when the lease was lost.
    async fn settle(
        &self,
        lease: &LeasedDelivery,
        settlement: Settlement,
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Records many attempts' outcomes, each exactly as [`Store::settle`]
    /// would (guarded by its own lease), in one write: a worker under load
    /// pays for one write instead of one per delivery. The answer has one
    /// entry per request, in order: `false` where that lease was lost. An
    /// error means none was recorded; their leases expire and the
    /// deliveries are tried again (at-least-once). The default settles one
    /// by one, for backends without a cheaper way.
    async fn settle_many(&self, requests: Vec<SettleRequest>) -> Result<Vec<bool>, StoreError> {
        let mut settled = Vec::with_capacity(requests.len());
        for request in requests {
            settled.push(
                self.settle(&request.lease, request.settlement, request.now_ms)
                    .await?,
            );
        }
        Ok(settled)
    }

    /// Returns expired leases to PENDING; how many.
    async fn reclaim_expired(&self, now_ms: i64) -> Result<u64, StoreError>;

    /// Adds new deliveries for events (same inbox id, so the same
    /// idempotency key); the ids replayed.
    async fn replay(
        &self,
        selector: ReplaySelector,
        now_ms: i64,
    ) -> Result<Vec<String>, StoreError>;

    /// The stored event behind a delivery.
    async fn load_event(&self, inbox_id: &str) -> Result<Option<StoredEvent>, StoreError>;

    /// Counts of inbox rows by endpoint and status.
    async fn stats(&self) -> Result<Stats, StoreError>;

    /// A cheap round trip to the database, for readiness: `Ok` when it
    /// answers. The default reads a row that does not exist by primary key.
    async fn ping(&self) -> Result<(), StoreError> {
        self.load_event("readiness-probe").await.map(drop)
    }

    /// Wake-ups for idle delivery workers: new deliveries may be due (see
    /// [`DeliveryWakeups`]). Only a hint — workers still poll — so the
    /// default, for backends that cannot tell, never fires.
    fn delivery_wakeups(&self) -> DeliveryWakeups {
        DeliveryWakeups::never()
    }

    /// A small write that commits as events do (the same writer, the same
    /// fsync), for readiness: `Ok` when it committed. A read passes while
    /// commits fail or hang (a full or frozen disk), this does not. The
    /// default, for backends without one, is [`Store::ping`].
    async fn probe_write(&self, now_ms: i64) -> Result<(), StoreError> {
        let _ = now_ms;
        self.ping().await
    }

    /// How many writes wait for a commit right now (the queue that answers
    /// 503 when full); `None` when the backend cannot tell.
    fn commit_queue_depth(&self) -> Option<usize> {
        None
    }

    /// The backlog reads `serve` samples into `/metrics` (see
    /// [`BacklogCounts`]), when this store has them. Both backends do; the
    /// default, for a store that does not, is `None`, and then the gauges
    /// are not sampled.
    fn backlog_counts(self: Arc<Self>) -> Option<Arc<dyn BacklogCounts>> {
        let _ = self;
        None
    }

    /// What reconciliation reads and repairs (see [`Reconciliation`]),
    /// when this store has it. Both backends do; the default, for a store
    /// that does not, is `None`.
    fn reconciliation(self: Arc<Self>) -> Option<Arc<dyn Reconciliation>> {
        let _ = self;
        None
    }

    /// Pause, resume and the circuit breaker's counts (see
    /// [`TargetGates`]), when this store has them. Both backends do; the
    /// default, for a store that does not, is `None`, and then its leases
    /// honour no gate.
    fn target_gates(self: Arc<Self>) -> Option<Arc<dyn TargetGates>> {
        let _ = self;
        None
    }

    /// The secrets providers handed over in handshakes (see
    /// [`LearnedSecrets`]), when this store keeps them. Both backends do;
    /// without them, `asana` and `notion` endpoints learn no secret.
    fn learned_secrets(self: Arc<Self>) -> Option<Arc<dyn LearnedSecrets>> {
        let _ = self;
        None
    }
}
