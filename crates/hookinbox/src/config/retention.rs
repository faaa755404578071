//! `[retention]`, checked: how long bodies, dedup records and dead
//! deliveries are kept, and how the purge runs.

use std::num::NonZeroUsize;
use std::time::Duration;

use hookinbox_store::RetentionPolicy;
use serde::Serialize;

use super::checks::{non_zero_usize, positive};
use super::file::RetentionFile;
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
