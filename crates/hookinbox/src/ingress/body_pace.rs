//! How long a body may take. A provider sends its body in one burst from a
//! data centre; a client that trickles it (one byte per packet, 10 KiB/s)
//! is holding a connection and a buffer open for nothing. So after a short
//! grace period a body must keep up an average minimum rate, and whatever
//! its rate it must be complete within a hard deadline. A body that falls
//! behind ends in 408 `timeout`.
//!
//! Pure: it answers in time since the body started, on whatever clock the
//! caller keeps, so the rule is testable at its boundaries.

use std::time::Duration;

/// The pace rule of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyPace {
    /// Time a body may take before the minimum rate applies.
    pub grace: Duration,
    /// Average bytes per second a body must keep up after the grace period.
    pub min_bytes_per_second: u64,
    /// Time a whole body may take, whatever its rate.
    pub max_duration: Duration,
}

impl BodyPace {
    /// How long after the body started the byte after the first
    /// `received` ones may arrive.
    pub fn allowed(&self, received: u64) -> Duration {
        let earned =
            Duration::from_secs_f64(received as f64 / self.min_bytes_per_second.max(1) as f64);
        self.grace.saturating_add(earned).min(self.max_duration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACE: BodyPace = BodyPace {
        grace: Duration::from_secs(2),
        min_bytes_per_second: 1_000,
        max_duration: Duration::from_secs(30),
    };

    #[test]
    fn nothing_received_may_wait_out_the_grace_period_exactly() {
        assert_eq!(PACE.allowed(0), Duration::from_secs(2));
    }

    #[test]
    fn each_byte_received_earns_time_at_the_minimum_rate() {
        // 500 bytes at 1,000 B/s earn half a second beyond the grace.
        assert_eq!(PACE.allowed(500), Duration::from_millis(2_500));
    }

    #[test]
    fn a_fast_body_is_still_bounded_by_the_hard_deadline() {
        assert_eq!(PACE.allowed(27_999), Duration::from_millis(29_999));
        assert_eq!(PACE.allowed(28_000), Duration::from_secs(30));
        assert_eq!(PACE.allowed(10_000_000), Duration::from_secs(30));
    }

    #[test]
    fn a_trickle_falls_behind() {
        // One byte per 100 ms is 10 B/s: after 3 s, 30 bytes earned only
        // 30 ms, so the deadline (2.03 s) has passed.
        assert!(PACE.allowed(30) < Duration::from_secs(3));
    }
}
