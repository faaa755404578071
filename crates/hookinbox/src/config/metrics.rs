//! `[metrics]`, checked: how often `serve` samples the gauges it reads
//! from the database (see `crate::metrics_sampler`).

use std::time::Duration;

use serde::Serialize;

use super::checks::positive;
use super::file::MetricsFile;
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
