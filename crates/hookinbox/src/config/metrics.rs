//! `[metrics]`, as parsed (the `*File`
//! structs) and checked: how often `serve` samples the gauges it reads
//! from the database (see `crate::metrics_sampler`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::checks::positive;
use super::ConfigError;

/// The sampling periods.
#[derive(Debug, Clone, Serialize)]
pub struct Metrics {
    /// The backlog gauges (index range scans that follow the backlog).
    #[serde(with = "humantime_serde")]
    pub sample_interval: Duration,
    /// The PROCESSED row count (a count over every processed row).
    #[serde(with = "humantime_serde")]
    pub count_interval: Duration,
}

impl Metrics {
    pub(super) fn from_file(file: MetricsFile) -> Result<Metrics, ConfigError> {
        Ok(Metrics {
            sample_interval: positive(file.sample_interval, "metrics.sample_interval")?,
            count_interval: positive(file.count_interval, "metrics.count_interval")?,
        })
    }
}

/// `[metrics]`: the gauges `serve` reads from the database for `/metrics`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsFile {
    /// How often the backlog is read: the oldest unprocessed event per
    /// endpoint, open deliveries and the oldest due one per target, and the
    /// ACCEPTED and FAILED row counts. Each is an index range scan whose
    /// cost follows the backlog, not the inbox.
    #[serde(default = "default_sample_interval", with = "humantime_serde")]
    pub sample_interval: Duration,
    /// How often the PROCESSED rows are counted: a count over every
    /// processed row (about 0.2 s per million on SQLite), so less often.
    #[serde(default = "default_count_interval", with = "humantime_serde")]
    pub count_interval: Duration,
}

fn default_sample_interval() -> Duration {
    Duration::from_secs(15)
}
fn default_count_interval() -> Duration {
    Duration::from_secs(5 * 60)
}

impl Default for MetricsFile {
    fn default() -> Self {
        MetricsFile {
            sample_interval: default_sample_interval(),
            count_interval: default_count_interval(),
        }
    }
}
