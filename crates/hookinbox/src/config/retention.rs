//! `[retention]`, as parsed (the `*File`
//! structs) and checked: how long bodies, dedup records and dead
//! deliveries are kept, and how the purge runs.

use std::num::NonZeroUsize;
use std::time::Duration;

use hookinbox_store::RetentionPolicy;
use serde::{Deserialize, Serialize};

use super::checks::{non_zero_usize, positive};
use super::ConfigError;

/// The retention rules as configured; `None` keeps that data for ever.
#[derive(Debug, Clone, Serialize)]
pub struct Retention {
    /// Bodies and audit headers, by the event's arrival.
    #[serde(with = "humantime_serde")]
    pub raw_payload: Option<Duration>,
    /// Whole events, by their arrival. As configured: the dedup rule that
    /// applies is never shorter than the endpoints' redelivery windows
    /// (`crate::retention`).
    #[serde(with = "humantime_serde")]
    pub dedup: Option<Duration>,
    /// DEAD deliveries, by when they died.
    #[serde(with = "humantime_serde")]
    pub dead_deliveries: Option<Duration>,
    /// How often `serve` purges.
    #[serde(with = "humantime_serde")]
    pub purge_interval: Duration,
    /// Items per rule in one purge transaction.
    pub batch: NonZeroUsize,
}

impl Retention {
    pub(super) fn from_file(file: RetentionFile) -> Result<Retention, ConfigError> {
        let keep = |value: Option<Duration>, field: &str| {
            value.map(|value| positive(value, field)).transpose()
        };
        Ok(Retention {
            raw_payload: keep(file.raw_payload, "retention.raw_payload")?,
            dedup: keep(file.dedup, "retention.dedup")?,
            dead_deliveries: keep(file.dead_deliveries, "retention.dead_deliveries")?,
            purge_interval: positive(file.purge_interval, "retention.purge_interval")?,
            batch: non_zero_usize(file.batch, "retention.batch")?,
        })
    }

    /// Whether any rule is on.
    pub fn is_on(&self) -> bool {
        self.raw_payload.is_some() || self.dedup.is_some() || self.dead_deliveries.is_some()
    }

    /// The rules as the store takes them, the configured `dedup` raised to
    /// `min_dedup` (the longest redelivery window) when it is shorter.
    pub fn policy(&self, min_dedup: Duration) -> RetentionPolicy {
        RetentionPolicy {
            raw_payload: self.raw_payload,
            dedup: self.dedup.map(|dedup| dedup.max(min_dedup)),
            dead_deliveries: self.dead_deliveries,
        }
    }
}

/// `[retention]`: how long each kind of data is kept; every rule is off
/// (kept for ever) unless set.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionFile {
    /// Bodies and audit headers of events older than this are dropped; the
    /// rows stay.
    #[serde(default, with = "humantime_serde")]
    pub raw_payload: Option<Duration>,
    /// Events older than this are deleted whole; never less than the
    /// longest redelivery window of the endpoints' providers.
    #[serde(default, with = "humantime_serde")]
    pub dedup: Option<Duration>,
    /// DEAD deliveries older than this are deleted with their attempts.
    #[serde(default, with = "humantime_serde")]
    pub dead_deliveries: Option<Duration>,
    /// How often `serve` purges.
    #[serde(default = "default_purge_interval", with = "humantime_serde")]
    pub purge_interval: Duration,
    /// Items purged per rule in one transaction.
    #[serde(default = "default_purge_batch")]
    pub batch: usize,
}

fn default_purge_interval() -> Duration {
    Duration::from_secs(5 * 60)
}
fn default_purge_batch() -> usize {
    1000
}

impl Default for RetentionFile {
    fn default() -> Self {
        RetentionFile {
            raw_payload: None,
            dedup: None,
            dead_deliveries: None,
            purge_interval: default_purge_interval(),
            batch: default_purge_batch(),
        }
    }
}
