//! Log lines for refused requests, bounded: anyone on the internet can send
//! bad signatures as fast as they like, and each refusal must not cost a log
//! line. Up to a burst of lines go out, then a steady few per second; the
//! rest are counted and the next line that goes out says how many were
//! suppressed. Every refusal is still counted in the metrics
//! (`hookinbox_ingress_requests_total`).

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

/// Lines per second once the burst is spent.
const LINES_PER_SECOND: u32 = 5;
/// Lines that may go out at once.
const BURST: u32 = 20;

/// The line budget of one kind of refusal, on governor's clock `C` (the
/// monotonic clock in service; a fake one in tests, so the refill is
/// stepped rather than waited for).
pub struct RefusalLog<C: Clock = DefaultClock> {
    limiter: RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<C::Instant>>,
    suppressed: AtomicU64,
}

impl Default for RefusalLog {
    fn default() -> Self {
        RefusalLog::with_clock(LINES_PER_SECOND, BURST, DefaultClock::default())
    }
}

impl<C: Clock> RefusalLog<C> {
    fn with_clock(per_second: u32, burst: u32, clock: C) -> RefusalLog<C> {
        let quota = Quota::per_second(NonZeroU32::new(per_second).unwrap_or(NonZeroU32::MIN))
            .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
        RefusalLog {
            limiter: RateLimiter::direct_with_clock(quota, clock),
            suppressed: AtomicU64::new(0),
        }
    }

    /// Whether this refusal gets a line: `Some(n)` with the number of
    /// refusals suppressed since the last line, or `None` to stay silent.
    pub fn admit(&self) -> Option<u64> {
        if self.limiter.check().is_ok() {
            Some(self.suppressed.swap(0, Ordering::Relaxed))
        } else {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;
    use std::time::Duration;

    #[test]
    fn a_flood_gets_the_burst_then_a_count_of_what_was_suppressed() {
        let clock = FakeRelativeClock::default();
        let log = RefusalLog::with_clock(1, 3, clock.clone());
        let admitted: Vec<Option<u64>> = (0..10).map(|_| log.admit()).collect();
        assert_eq!(&admitted[..3], &[Some(0), Some(0), Some(0)]);
        assert!(admitted[3..].iter().all(Option::is_none));
        // One line a second: not a moment before the second is over.
        clock.advance(Duration::from_millis(999));
        assert_eq!(log.admit(), None);
        clock.advance(Duration::from_millis(1));
        assert_eq!(
            log.admit(),
            Some(8),
            "the next line reports the 8 suppressed"
        );
        assert_eq!(log.suppressed.load(Ordering::Relaxed), 0);
        assert_eq!(log.admit(), None, "and spent the second's line");
    }

    #[test]
    fn the_service_budget_is_a_burst_of_20_then_5_a_second() {
        let clock = FakeRelativeClock::default();
        let log = RefusalLog::with_clock(LINES_PER_SECOND, BURST, clock.clone());
        let lines = (0..300).filter(|_| log.admit().is_some()).count();
        assert_eq!(lines, 20);
        clock.advance(Duration::from_secs(1));
        let lines = (0..300).filter(|_| log.admit().is_some()).count();
        assert_eq!(lines, 5);
    }
}
