//! How long `listen` waits before trying again: doubling from a first
//! wait up to a ceiling. One client, so no jitter is needed.

use std::time::Duration;

/// The wait before retry number `retry` (0 for the first retry).
pub fn delay(retry: u32, first: Duration, ceiling: Duration) -> Duration {
    first
        .checked_mul(1u32.checked_shl(retry.min(16)).unwrap_or(u32::MAX))
        .map_or(ceiling, |wait| wait.min(ceiling))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_ceiling() {
        let first = Duration::from_millis(100);
        let ceiling = Duration::from_secs(2);
        assert_eq!(delay(0, first, ceiling), first);
        assert_eq!(delay(1, first, ceiling), Duration::from_millis(200));
        assert_eq!(delay(4, first, ceiling), Duration::from_millis(1600));
        assert_eq!(delay(5, first, ceiling), ceiling);
        assert_eq!(delay(u32::MAX, first, ceiling), ceiling);
    }
}
