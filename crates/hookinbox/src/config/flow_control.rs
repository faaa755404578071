//! A target's flow control: `delay`, `rate_limit` and `circuit_breaker`
//! (docs/delivery.md, "Flow control"), as parsed and checked. What they
//! do at run time is the store's target gate (`hookinbox_store::target_gate`)
//! and the accept's first due time; none of them spends an attempt.

use std::time::Duration;

use hookinbox_store::{CircuitBreaker, GatePolicy, RateLimit};
use serde::{Deserialize, Serialize};

use super::checks::positive;
use super::ConfigError;

/// A target's `delay`, `rate_limit` and `circuit_breaker`, checked.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FlowControl {
    /// Deliveries are first due this long after the event was accepted.
    #[serde(
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub delay: Option<Duration>,
    /// At most this rate of attempts, across every worker process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<TargetRateLimit>,
    /// Stop attempting after consecutive transient failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub circuit_breaker: Option<CircuitBreakerSettings>,
}

/// `rate_limit = { per_second = 50, burst = 10 }`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetRateLimit {
    /// Attempts a second, on average (fractions allowed: `0.5`).
    pub per_second: f64,
    /// Attempts at once after a quiet spell. Absent: `per_second`
    /// (rounded up), at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

/// `circuit_breaker = { failures = 5, open_for = "30s" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CircuitBreakerSettings {
    /// Consecutive transient failures that open the circuit.
    pub failures: u32,
    /// How long it stays open before one probe goes.
    #[serde(with = "humantime_serde")]
    pub open_for: Duration,
}

impl FlowControl {
    /// Checks the three fields; errors name them (`endpoint[0].target[1].rate_limit.per_second`).
    pub(super) fn check(
        delay: Option<Duration>,
        rate_limit: Option<TargetRateLimit>,
        circuit_breaker: Option<CircuitBreakerSettings>,
        field: &str,
    ) -> Result<FlowControl, ConfigError> {
        let sub = |name: &str| format!("{field}.{name}");
        if let Some(limit) = &rate_limit {
            if !(limit.per_second.is_finite() && limit.per_second > 0.0) {
                return Err(ConfigError::invalid(
                    sub("rate_limit.per_second"),
                    "must be a number above zero",
                ));
            }
            if limit.burst == Some(0) {
                return Err(ConfigError::invalid(
                    sub("rate_limit.burst"),
                    "must be at least 1",
                ));
            }
        }
        if let Some(breaker) = &circuit_breaker {
            if breaker.failures == 0 {
                return Err(ConfigError::invalid(
                    sub("circuit_breaker.failures"),
                    "must be at least 1",
                ));
            }
            positive(breaker.open_for, &sub("circuit_breaker.open_for"))?;
        }
        Ok(FlowControl {
            delay: delay.filter(|delay| !delay.is_zero()),
            rate_limit,
            circuit_breaker,
        })
    }

    /// What a lease of this target must honour.
    pub fn gate_policy(&self) -> GatePolicy {
        GatePolicy {
            rate_limit: self.rate_limit.map(|limit| RateLimit {
                per_second: limit.per_second,
                burst: limit.burst.unwrap_or_else(|| {
                    limit.per_second.ceil().clamp(1.0, f64::from(u32::MAX)) as u32
                }),
            }),
            circuit_breaker: self.circuit_breaker.map(|breaker| CircuitBreaker {
                failures: breaker.failures,
                open_for_ms: i64::try_from(breaker.open_for.as_millis()).unwrap_or(i64::MAX),
            }),
        }
    }

    /// The delay in milliseconds, when there is one.
    pub fn delay_ms(&self) -> Option<i64> {
        self.delay
            .map(|delay| i64::try_from(delay.as_millis()).unwrap_or(i64::MAX))
    }
}
