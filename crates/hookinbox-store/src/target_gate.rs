//! The gate in front of a target's leases: pause, rate limit and circuit
//! breaker (docs/architecture.md §5, "Flow control"). None of them spends
//! an attempt: they decide how many deliveries a lease may take, before it
//! looks for any, so a paused or open target's rows are never scanned.
//!
//! The state is one `target_gate` row per (endpoint, target), read and
//! written inside the lease's own transaction (locked on PostgreSQL), so
//! every process honours it and a rate limit holds across processes: the
//! lease that takes rows takes their tokens in the same commit. What to do
//! with the row is decided here, by pure functions of the row, the
//! target's policy and `now`; the backends only read and write it.

use std::fmt;

/// `rate_limit`: at most `per_second` deliveries a second on average, and
/// `burst` at once after a quiet spell (a token bucket).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: u32,
}

/// `circuit_breaker`: after `failures` consecutive transient failures the
/// target opens for `open_for_ms`, then one probe decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CircuitBreaker {
    pub failures: u32,
    pub open_for_ms: i64,
}

/// A target's flow-control settings, as a lease needs them. The default
/// (neither) still honours a pause.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GatePolicy {
    pub rate_limit: Option<RateLimit>,
    pub circuit_breaker: Option<CircuitBreaker>,
}

impl GatePolicy {
    /// Whether a lease must lock and write the gate row (tokens to take, a
    /// circuit to move): only then are leases of the target serialised.
    pub fn writes_state(&self) -> bool {
        self.rate_limit.is_some() || self.circuit_breaker.is_some()
    }
}

/// Where a target's circuit is. Who moves it: an attempt's outcome
/// ([`GateState::after_attempt`]) opens and closes it; a lease
/// ([`GateState::admit`]) turns an open circuit whose time is up
/// half-open by taking the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    /// Attempts go as due. Opened by the `failures`-th transient failure in a row.
    Closed,
    /// No attempts until `open_until_ms`; then a lease takes one probe.
    Open,
    /// One probe is in flight (until `open_until_ms`, its lease's end, after
    /// which another may go). Its success closes the circuit, its failure
    /// opens it again.
    HalfOpen,
}

impl CircuitState {
    pub fn as_str(self) -> &'static str {
        match self {
            CircuitState::Closed => "CLOSED",
            CircuitState::Open => "OPEN",
            CircuitState::HalfOpen => "HALF_OPEN",
        }
    }

    pub fn parse(text: &str) -> CircuitState {
        match text {
            "OPEN" => CircuitState::Open,
            "HALF_OPEN" => CircuitState::HalfOpen,
            _ => CircuitState::Closed,
        }
    }
}

/// What an operator and `hookinbox_target_state` see of a target: paused
/// above all, else its circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetState {
    Closed,
    Open,
    HalfOpen,
    Paused,
}

impl TargetState {
    /// As `hookinbox_target_state` encodes it (docs/operations.md).
    pub fn gauge_value(self) -> i64 {
        match self {
            TargetState::Closed => 0,
            TargetState::Open => 1,
            TargetState::HalfOpen => 2,
            TargetState::Paused => 3,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TargetState::Closed => "closed",
            TargetState::Open => "open",
            TargetState::HalfOpen => "half_open",
            TargetState::Paused => "paused",
        }
    }
}

impl fmt::Display for TargetState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `target_gate` row. A target without a row is closed, not paused,
/// with a full bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct GateState {
    /// When the target was paused; `None` when it is not.
    pub paused_at_ms: Option<i64>,
    pub circuit: CircuitState,
    /// Consecutive transient failures while closed.
    pub failures: u32,
    /// Open: when a probe may go. Half-open: when the probe's lease ends.
    pub open_until_ms: Option<i64>,
    /// Tokens in the bucket at `tokens_at_ms`; `None`: a full bucket.
    pub tokens: Option<f64>,
    pub tokens_at_ms: Option<i64>,
}

impl Default for GateState {
    fn default() -> GateState {
        GateState {
            paused_at_ms: None,
            circuit: CircuitState::Closed,
            failures: 0,
            open_until_ms: None,
            tokens: None,
            tokens_at_ms: None,
        }
    }
}

/// A circuit that moved, for the one log line per transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CircuitTransition {
    pub from: CircuitState,
    pub to: CircuitState,
}

impl CircuitTransition {
    /// The one log line of a transition (`hookinbox_target_state` shows
    /// where it is now).
    pub fn log(&self, endpoint_id: &str, target: &str) {
        tracing::warn!(
            message = "Circuit breaker moved.",
            endpoint = endpoint_id,
            target,
            from = self.from.as_str(),
            to = self.to.as_str()
        );
    }
}

/// How an attempt ended, as the breaker counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptVerdict {
    /// The target answered: delivered, or refused for good (a 4xx is an
    /// answer, not an outage).
    Answered,
    /// A transient failure (timeout, connection error, 5xx, 429, …).
    TransientFailure,
}

/// What a lease may take, and the gate row to write once it knows how many
/// it took ([`Admission::settle`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    /// The most deliveries this lease may take.
    pub max: usize,
    before: GateState,
    after: GateState,
    policy: GatePolicy,
}

impl Admission {
    /// The row to write after `leased` deliveries were taken: tokens spent,
    /// a probe recorded. `None` when nothing changes (no write).
    pub fn settle(mut self, leased: usize) -> Option<(GateState, Option<CircuitTransition>)> {
        if !self.policy.writes_state() || self.max == 0 {
            return None;
        }
        if leased == 0 {
            // Nothing due: no probe went, and an unspent refill need not be
            // written (it is recomputed from the same row next time).
            return None;
        }
        if let Some(tokens) = self.after.tokens.as_mut() {
            *tokens = (*tokens - leased as f64).max(0.0);
        }
        let transition = (self.before.circuit != self.after.circuit).then_some(CircuitTransition {
            from: self.before.circuit,
            to: self.after.circuit,
        });
        Some((self.after, transition))
    }
}

impl GateState {
    /// What target state an operator sees.
    pub fn target_state(&self) -> TargetState {
        if self.paused_at_ms.is_some() {
            return TargetState::Paused;
        }
        match self.circuit {
            CircuitState::Closed => TargetState::Closed,
            CircuitState::Open => TargetState::Open,
            CircuitState::HalfOpen => TargetState::HalfOpen,
        }
    }

    /// How many of `wanted` deliveries a lease at `now_ms` may take; a
    /// probe (half-open) holds the circuit for `lease_ms`.
    pub fn admit(
        &self,
        policy: &GatePolicy,
        wanted: usize,
        now_ms: i64,
        lease_ms: i64,
    ) -> Admission {
        let mut after = self.clone();
        let mut max = wanted;
        if self.paused_at_ms.is_some() {
            max = 0;
        }
        if let Some(_breaker) = policy.circuit_breaker.filter(|_| max > 0) {
            let due = self.open_until_ms.is_none_or(|until| now_ms >= until);
            match self.circuit {
                CircuitState::Closed => {}
                CircuitState::Open | CircuitState::HalfOpen if due => {
                    after.circuit = CircuitState::HalfOpen;
                    after.open_until_ms = Some(now_ms + lease_ms);
                    max = max.min(1);
                }
                CircuitState::Open | CircuitState::HalfOpen => max = 0,
            }
        }
        if let Some(limit) = policy.rate_limit.filter(|_| max > 0) {
            let burst = f64::from(limit.burst.max(1));
            let tokens = match (self.tokens, self.tokens_at_ms) {
                (Some(tokens), Some(at)) => {
                    let elapsed_s = (now_ms - at).max(0) as f64 / 1000.0;
                    (tokens + elapsed_s * limit.per_second).min(burst)
                }
                _ => burst,
            };
            after.tokens = Some(tokens);
            // Never back in time: a lease that read its clock before it
            // waited for another process's lease (which refilled up to a
            // later `now`) must not refill those milliseconds again.
            after.tokens_at_ms = Some(self.tokens_at_ms.map_or(now_ms, |at| at.max(now_ms)));
            max = max.min(tokens.floor() as usize);
        }
        Admission {
            max,
            before: self.clone(),
            after,
            policy: *policy,
        }
    }

    /// The row after an attempt ended `verdict` at `now_ms`, and the
    /// circuit's transition if it moved.
    pub fn after_attempt(
        &self,
        breaker: &CircuitBreaker,
        verdict: AttemptVerdict,
        now_ms: i64,
    ) -> (GateState, Option<CircuitTransition>) {
        let mut after = self.clone();
        match verdict {
            AttemptVerdict::Answered => {
                after.circuit = CircuitState::Closed;
                after.failures = 0;
                after.open_until_ms = None;
            }
            AttemptVerdict::TransientFailure => {
                after.failures = self.failures.saturating_add(1);
                let opens = match self.circuit {
                    CircuitState::Closed => after.failures >= breaker.failures.max(1),
                    CircuitState::HalfOpen => true,
                    // An attempt leased before the circuit opened: it stays
                    // open for its time, no longer.
                    CircuitState::Open => false,
                };
                if opens {
                    after.circuit = CircuitState::Open;
                    after.open_until_ms = Some(now_ms + breaker.open_for_ms);
                }
            }
        }
        let transition = (self.circuit != after.circuit).then_some(CircuitTransition {
            from: self.circuit,
            to: after.circuit,
        });
        (after, transition)
    }
}

/// A target's gate as operators list it (`hookinbox targets list`, the
/// admin API, `/metrics`).
#[derive(Debug, Clone, PartialEq)]
pub struct TargetGateView {
    pub endpoint_id: String,
    pub target: String,
    pub state: GateState,
}

#[cfg(test)]
mod tests {
    use super::*;

    const BREAKER: CircuitBreaker = CircuitBreaker {
        failures: 3,
        open_for_ms: 1_000,
    };

    fn breaker_policy() -> GatePolicy {
        GatePolicy {
            rate_limit: None,
            circuit_breaker: Some(BREAKER),
        }
    }

    #[test]
    fn a_paused_target_admits_nothing_whatever_its_policy() {
        let paused = GateState {
            paused_at_ms: Some(5),
            ..GateState::default()
        };
        assert_eq!(paused.admit(&GatePolicy::default(), 8, 10, 100).max, 0);
        assert_eq!(paused.admit(&breaker_policy(), 8, 10, 100).max, 0);
        assert_eq!(paused.target_state(), TargetState::Paused);
    }

    #[test]
    fn the_third_transient_failure_in_a_row_opens_and_an_answer_resets_the_count() {
        let closed = GateState::default();
        let (one, moved) = closed.after_attempt(&BREAKER, AttemptVerdict::TransientFailure, 0);
        assert_eq!((one.circuit, moved), (CircuitState::Closed, None));
        let (reset, _) = one.after_attempt(&BREAKER, AttemptVerdict::Answered, 0);
        assert_eq!(reset.failures, 0);
        let (two, _) = one.after_attempt(&BREAKER, AttemptVerdict::TransientFailure, 0);
        let (three, moved) = two.after_attempt(&BREAKER, AttemptVerdict::TransientFailure, 50);
        assert_eq!(three.circuit, CircuitState::Open);
        assert_eq!(three.open_until_ms, Some(1_050));
        assert_eq!(
            moved,
            Some(CircuitTransition {
                from: CircuitState::Closed,
                to: CircuitState::Open
            })
        );
    }

    #[test]
    fn an_open_circuit_admits_nothing_until_its_time_then_exactly_one_probe() {
        let open = GateState {
            circuit: CircuitState::Open,
            open_until_ms: Some(1_000),
            ..GateState::default()
        };
        assert_eq!(open.admit(&breaker_policy(), 8, 999, 100).max, 0);
        let probe = open.admit(&breaker_policy(), 8, 1_000, 100);
        assert_eq!(probe.max, 1);
        let (half_open, moved) = probe.settle(1).expect("a probe is written");
        assert_eq!(half_open.circuit, CircuitState::HalfOpen);
        assert_eq!(moved.map(|m| m.to), Some(CircuitState::HalfOpen));
        // While the probe's lease runs, nothing else goes.
        assert_eq!(half_open.admit(&breaker_policy(), 8, 1_099, 100).max, 0);
        // A lost probe (its lease ran out) lets another go.
        assert_eq!(half_open.admit(&breaker_policy(), 8, 1_100, 100).max, 1);
    }

    #[test]
    fn a_probe_with_nothing_due_leaves_the_circuit_open() {
        let open = GateState {
            circuit: CircuitState::Open,
            open_until_ms: Some(0),
            ..GateState::default()
        };
        assert_eq!(open.admit(&breaker_policy(), 8, 5, 100).settle(0), None);
    }

    #[test]
    fn the_probe_closes_on_an_answer_and_reopens_on_a_failure() {
        let half_open = GateState {
            circuit: CircuitState::HalfOpen,
            open_until_ms: Some(2_000),
            failures: 3,
            ..GateState::default()
        };
        let (closed, _) = half_open.after_attempt(&BREAKER, AttemptVerdict::Answered, 1_500);
        assert_eq!((closed.circuit, closed.failures), (CircuitState::Closed, 0));
        let (open, moved) =
            half_open.after_attempt(&BREAKER, AttemptVerdict::TransientFailure, 1_500);
        assert_eq!(open.circuit, CircuitState::Open);
        assert_eq!(open.open_until_ms, Some(2_500));
        assert_eq!(moved.map(|m| m.from), Some(CircuitState::HalfOpen));
    }

    #[test]
    fn the_bucket_starts_full_refills_at_the_rate_and_never_above_the_burst() {
        let policy = GatePolicy {
            rate_limit: Some(RateLimit {
                per_second: 50.0,
                burst: 10,
            }),
            circuit_breaker: None,
        };
        let fresh = GateState::default();
        let first = fresh.admit(&policy, 64, 0, 100);
        assert_eq!(first.max, 10);
        let (spent, _) = first.settle(10).expect("tokens were taken");
        assert_eq!(spent.admit(&policy, 64, 0, 100).max, 0);
        // 100 ms at 50/s: 5 tokens.
        assert_eq!(spent.admit(&policy, 64, 100, 100).max, 5);
        // An hour later: still only the burst.
        assert_eq!(spent.admit(&policy, 64, 3_600_000, 100).max, 10);
        // A lease whose clock is behind the last refill refills nothing,
        // and leaves the refill time where it was.
        let late = spent
            .admit(&policy, 64, 100, 100)
            .settle(5)
            .expect("taken")
            .0;
        let behind = late.admit(&policy, 64, 60, 100);
        assert_eq!(behind.max, 0);
        assert_eq!(behind.settle(0), None);
        // Taking fewer than admitted spends only those.
        let (three_taken, _) = fresh.admit(&policy, 64, 0, 100).settle(3).expect("taken");
        assert_eq!(three_taken.tokens, Some(7.0));
    }
}
