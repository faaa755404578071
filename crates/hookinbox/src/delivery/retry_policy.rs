//! When to try a failed delivery again, and when to give up. Pure: the
//! clock and the jitter are passed in, so the boundaries are testable.
//!
//! A delivery whose event could not be read from our own storage was not
//! attempted: it is deferred ([`storage_fault_retry_at`]), outside the
//! target's budget, and never given up on (docs/architecture.md §5).

use hookinbox_store::Settlement;

/// How one attempt ended, as the target saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The target accepted the event.
    Delivered,
    /// Worth retrying (timeouts, connection errors, 5xx, 408/409/425/429).
    /// `retry_after_ms` is the target's own `Retry-After`, when it sent one.
    Transient {
        error: String,
        retry_after_ms: Option<i64>,
    },
    /// Retrying cannot help (other 4xx, a failed transform): dead at once.
    Permanent { error: String },
    /// The target's transform answered `cancel: true`: nothing was sent,
    /// and nothing is to be sent.
    Cancelled,
}

/// The retry budget of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub max_age_ms: i64,
    /// The first retry waits up to this long; each later one up to twice the previous bound.
    pub base_ms: i64,
    /// No wait is longer than this.
    pub cap_ms: i64,
}

impl RetryPolicy {
    /// Decides the settlement of an attempt.
    ///
    /// - `attempts_before`: attempts already recorded before this one;
    /// - `created_at_ms`: when the delivery was created (the age budget starts there);
    /// - `jitter`: uniform in `[0, 1)`; full jitter waits `jitter × min(cap, base × 2^(n-1))`.
    ///
    /// A `Retry-After` from the target is honoured as given (not capped, not
    /// jittered); a wait beyond the age budget makes the delivery dead.
    pub fn settle(
        &self,
        attempts_before: u32,
        created_at_ms: i64,
        now_ms: i64,
        outcome: AttemptOutcome,
        jitter: f64,
    ) -> Settlement {
        let (error, retry_after_ms) = match outcome {
            AttemptOutcome::Delivered => return Settlement::Delivered,
            AttemptOutcome::Cancelled => {
                return Settlement::Cancelled {
                    note: "cancelled by the transform: nothing was sent".into(),
                }
            }
            AttemptOutcome::Permanent { error } => {
                return Settlement::Dead {
                    error: format!("permanent: {error}"),
                }
            }
            AttemptOutcome::Transient {
                error,
                retry_after_ms,
            } => (error, retry_after_ms),
        };
        let attempts = attempts_before.saturating_add(1);
        if attempts >= self.max_attempts {
            return Settlement::Dead {
                error: format!("{error} (gave up after {attempts} attempts)"),
            };
        }
        let delay_ms = match retry_after_ms {
            // The target knows its own recovery better than our cap does;
            // only the age budget bounds it.
            Some(retry_after) => retry_after.max(0),
            None => {
                let exponent = (attempts - 1).min(40);
                let bound = self
                    .base_ms
                    .saturating_mul(1_i64 << exponent)
                    .min(self.cap_ms);
                (jitter.clamp(0.0, 1.0) * bound as f64) as i64
            }
        };
        let next_attempt_at_ms = now_ms.saturating_add(delay_ms);
        if next_attempt_at_ms.saturating_sub(created_at_ms) > self.max_age_ms {
            return Settlement::Dead {
                error: format!("{error} (gave up: older than the target's max_age)"),
            };
        }
        Settlement::Retry {
            next_attempt_at_ms,
            error,
        }
    }
}

/// How long a delivery waits after a storage read fault, at most; at
/// least half of it (jitter), so deliveries deferred together do not all
/// come back at once.
pub const STORAGE_FAULT_WAIT_MS: i64 = 10_000;

/// When a delivery deferred at `now_ms` for a storage read fault is due
/// again; `jitter` uniform in `[0, 1)`. No attempt count or age enters:
/// the fault is ours, and the target's budget is untouched by it.
pub fn storage_fault_retry_at(now_ms: i64, jitter: f64) -> i64 {
    let half = STORAGE_FAULT_WAIT_MS / 2;
    now_ms
        .saturating_add(half)
        .saturating_add((jitter.clamp(0.0, 1.0) * half as f64) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RetryPolicy = RetryPolicy {
        max_attempts: 5,
        max_age_ms: 60_000,
        base_ms: 1_000,
        cap_ms: 10_000,
    };

    fn transient(retry_after_ms: Option<i64>) -> AttemptOutcome {
        AttemptOutcome::Transient {
            error: "http 503".into(),
            retry_after_ms,
        }
    }

    #[test]
    fn full_jitter_bounds_double_up_to_the_cap() {
        let at = |attempts_before, jitter| match POLICY.settle(
            attempts_before,
            0,
            0,
            transient(None),
            jitter,
        ) {
            Settlement::Retry {
                next_attempt_at_ms, ..
            } => next_attempt_at_ms,
            other => panic!("{other:?}"),
        };
        assert_eq!(at(0, 0.999_999), 999);
        assert_eq!(at(1, 0.999_999), 1_999);
        assert_eq!(at(2, 0.5), 2_000);
        assert_eq!(at(3, 0.999_999), 7_999);
        assert_eq!(at(0, 0.0), 0, "full jitter may retry at once");
    }

    #[test]
    fn cap_limits_the_delay() {
        let policy = RetryPolicy {
            max_attempts: 100,
            ..POLICY
        };
        match policy.settle(30, 0, 0, transient(None), 0.999_999) {
            Settlement::Retry {
                next_attempt_at_ms, ..
            } => assert_eq!(next_attempt_at_ms, 9_999),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn retry_after_is_honoured_exactly() {
        match POLICY.settle(0, 0, 100, transient(Some(3_000)), 0.1) {
            Settlement::Retry {
                next_attempt_at_ms, ..
            } => assert_eq!(next_attempt_at_ms, 3_100),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn attempts_budget_boundary() {
        assert!(matches!(
            POLICY.settle(3, 0, 0, transient(None), 0.5),
            Settlement::Retry { .. }
        ));
        assert!(matches!(
            POLICY.settle(4, 0, 0, transient(None), 0.5),
            Settlement::Dead { .. }
        ));
    }

    #[test]
    fn age_budget_boundary() {
        // The next attempt would be exactly at max_age: still allowed; one ms later: dead.
        assert!(matches!(
            POLICY.settle(0, 0, 59_000, transient(Some(1_000)), 0.0),
            Settlement::Retry { .. }
        ));
        assert!(matches!(
            POLICY.settle(0, 0, 59_001, transient(Some(1_000)), 0.0),
            Settlement::Dead { .. }
        ));
    }

    #[test]
    fn a_storage_fault_waits_half_to_all_of_its_wait_whatever_the_budget() {
        assert_eq!(storage_fault_retry_at(1_000, 0.0), 6_000);
        assert_eq!(storage_fault_retry_at(1_000, 0.999_999), 10_999);
        assert_eq!(storage_fault_retry_at(i64::MAX - 1, 0.5), i64::MAX);
    }

    #[test]
    fn permanent_and_delivered() {
        assert_eq!(
            POLICY.settle(0, 0, 0, AttemptOutcome::Delivered, 0.5),
            Settlement::Delivered
        );
        assert!(matches!(
            POLICY.settle(
                0,
                0,
                0,
                AttemptOutcome::Permanent {
                    error: "http 404".into()
                },
                0.5
            ),
            Settlement::Dead { .. }
        ));
    }
}
