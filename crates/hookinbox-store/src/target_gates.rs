//! What operators and workers ask of the target gates (see
//! [`crate::target_gate`]): pause, resume, and the breaker's count of an
//! attempt's outcome (operators list them through `StoreReads`). A capability of its own, as
//! [`crate::Reconciliation`] is; both backends have it.

use async_trait::async_trait;

use crate::{AttemptVerdict, CircuitBreaker, CircuitTransition, StoreError};

#[async_trait]
pub trait TargetGates: Send + Sync {
    /// Pauses a target: leases take none of its deliveries until it is
    /// resumed. `false` when it was already paused (its pause time kept).
    async fn pause(&self, endpoint_id: &str, target: &str, now_ms: i64)
        -> Result<bool, StoreError>;

    /// Resumes a paused target, and moves its pending deliveries' age
    /// (`created_at_ms`) on by the time each spent paused, so `max_age`
    /// does not count the pause. `false` when it was not paused.
    async fn resume(
        &self,
        endpoint_id: &str,
        target: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Counts an attempt's outcome in the target's breaker; the circuit's
    /// transition when it moved.
    async fn record_attempt(
        &self,
        endpoint_id: &str,
        target: &str,
        breaker: CircuitBreaker,
        verdict: AttemptVerdict,
        now_ms: i64,
    ) -> Result<Option<CircuitTransition>, StoreError>;
}
