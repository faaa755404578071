//! How many requests each secret version of an endpoint verified in the
//! last 24 hours, counted in memory by the process that served them: per
//! process, since it started, up to 24 hours (`hookinbox keys status`). A
//! rotation needs to know whether the provider still signs with the old
//! version before it is retired.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Hours in the window, one bucket each.
const HOURS: usize = 24;
const SECONDS_PER_HOUR: i64 = 3600;

/// Matches per secret version, in hourly buckets over the last 24 hours.
#[derive(Debug, Default)]
pub struct SecretMatches {
    by_version: Mutex<HashMap<String, Buckets>>,
}

/// `(hour, count)` for the hours `hour % 24` last held.
type Buckets = [(i64, u64); HOURS];

impl SecretMatches {
    /// Counts one request verified by `version` at `now` (unix seconds).
    pub fn record(&self, version: &str, now: i64) {
        let hour = now.div_euclid(SECONDS_PER_HOUR);
        let mut by_version = self
            .by_version
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let buckets = match by_version.get_mut(version) {
            Some(buckets) => buckets,
            None => by_version
                .entry(version.to_owned())
                .or_insert([(i64::MIN, 0); HOURS]),
        };
        let bucket = &mut buckets[bucket_of(hour)];
        if bucket.0 != hour {
            *bucket = (hour, 0);
        }
        bucket.1 += 1;
    }

    /// The requests `version` verified in the 24 hours up to `now`, to
    /// the hour.
    pub fn last_24h(&self, version: &str, now: i64) -> u64 {
        let by_version = self
            .by_version
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        by_version
            .get(version)
            .map_or(0, |buckets| in_window(buckets, now))
    }

    /// Every version that verified a request in the 24 hours up to `now`,
    /// with its count, by name: the ones a reload removed from the ring
    /// included (their counts are kept, and age out like any other).
    pub fn all_last_24h(&self, now: i64) -> Vec<(String, u64)> {
        let by_version = self
            .by_version
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut counts: Vec<(String, u64)> = by_version
            .iter()
            .map(|(version, buckets)| (version.clone(), in_window(buckets, now)))
            .filter(|(_, count)| *count > 0)
            .collect();
        counts.sort();
        counts
    }
}

/// The sum of the buckets of the 24 hours up to `now`.
fn in_window(buckets: &Buckets, now: i64) -> u64 {
    let hour = now.div_euclid(SECONDS_PER_HOUR);
    buckets
        .iter()
        .filter(|(at, _)| *at <= hour && *at > hour.saturating_sub(HOURS as i64))
        .map(|(_, count)| count)
        .sum()
}

fn bucket_of(hour: i64) -> usize {
    // `rem_euclid` of a positive modulus is in 0..HOURS.
    usize::try_from(hour.rem_euclid(HOURS as i64)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_version_and_forgets_after_24_hours() {
        let matches = SecretMatches::default();
        let start = 1_700_000_000;
        matches.record("old", start);
        matches.record("old", start + 10);
        matches.record("new", start + 3 * 3600);
        assert_eq!(matches.last_24h("old", start + 3 * 3600), 2);
        assert_eq!(matches.last_24h("new", start + 3 * 3600), 1);
        assert_eq!(matches.last_24h("other", start), 0);
        // Buckets never written count nothing (and do not overflow).
        assert_eq!(matches.last_24h("old", start), 2);
        // A day later the old hour's bucket no longer counts, and a new
        // count in the same bucket starts from zero.
        let day_later = start + 24 * 3600;
        assert_eq!(matches.last_24h("old", day_later), 0);
        matches.record("old", day_later);
        assert_eq!(matches.last_24h("old", day_later), 1);
        assert_eq!(matches.last_24h("new", day_later), 1);
        assert_eq!(
            matches.all_last_24h(day_later),
            [("new".to_owned(), 1), ("old".to_owned(), 1)]
        );
        assert_eq!(matches.all_last_24h(day_later + 24 * 3600), []);
    }
}
