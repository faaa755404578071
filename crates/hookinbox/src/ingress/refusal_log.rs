//! Log lines for refused requests, bounded: anyone on the internet can send
//! bad signatures as fast as they like, and each refusal must not cost a log
//! line. Up to a burst of lines go out, then a steady few per second; the
//! rest are counted and the next line that goes out says how many were
//! suppressed. Every refusal is still counted in the metrics
//! (`hookinbox_ingress_requests_total`).

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// Lines per second once the burst is spent.
const LINES_PER_SECOND: u32 = 5;
/// Lines that may go out at once.
const BURST: u32 = 20;

pub struct RefusalLog {
    limiter: DefaultDirectRateLimiter,
    suppressed: AtomicU64,
}

impl Default for RefusalLog {
    fn default() -> Self {
        RefusalLog::new(LINES_PER_SECOND, BURST)
    }
}

impl RefusalLog {
    fn new(per_second: u32, burst: u32) -> RefusalLog {
        let quota = Quota::per_second(NonZeroU32::new(per_second).unwrap_or(NonZeroU32::MIN))
            .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
        RefusalLog {
            limiter: RateLimiter::direct(quota),
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

    #[test]
    fn a_flood_gets_the_burst_then_a_count_of_what_was_suppressed() {
        let log = RefusalLog::new(1, 3);
        let admitted: Vec<Option<u64>> = (0..10).map(|_| log.admit()).collect();
        assert_eq!(&admitted[..3], &[Some(0), Some(0), Some(0)]);
        assert!(admitted[3..].iter().all(Option::is_none));
        std::thread::sleep(std::time::Duration::from_millis(1_100));
        assert_eq!(
            log.admit(),
            Some(7),
            "the next line reports the 7 suppressed"
        );
        assert_eq!(log.suppressed.load(Ordering::Relaxed), 0);
    }
}
