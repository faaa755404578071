//! `[storage]` and `[delivery]`, checked.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookinbox_store::StorageUrl;
use serde::{Serialize, Serializer};

use super::checks::{non_zero_usize, positive};
use super::file::{DeliveryFile, StorageFile};
use super::ConfigError;

/// Where events are stored: an SQLite file (the only backend of this build).
#[derive(Debug, Clone, Serialize)]
pub struct Storage {
    /// The database file, resolved against the config file's directory.
    #[serde(rename = "url", serialize_with = "as_sqlite_url")]
    pub sqlite_path: PathBuf,
    /// Longest a request waits for its commit (then 503).
    #[serde(with = "humantime_serde")]
    pub commit_timeout: Duration,
    /// How long a commit waits for the write lock another process holds.
    #[serde(with = "humantime_serde")]
    pub busy_timeout: Duration,
    /// Writes that may wait for the writer at once (then 503).
    pub queue_capacity: NonZeroUsize,
    /// Events one group commit takes at most.
    pub max_batch_events: NonZeroUsize,
}

fn as_sqlite_url<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format!("sqlite://{}", path.display()))
}

impl Storage {
    pub(super) fn from_file(file: StorageFile, base_dir: &Path) -> Result<Storage, ConfigError> {
        let sqlite_path = match StorageUrl::parse(&file.url, base_dir)
            .map_err(|e| ConfigError::invalid("storage.url", e.to_string()))?
        {
            StorageUrl::Sqlite(path) => path,
            StorageUrl::Postgres(_) => {
                return Err(ConfigError::invalid(
                    "storage.url",
                    "PostgreSQL storage is not available in this build yet; use sqlite://PATH",
                ))
            }
        };
        Ok(Storage {
            sqlite_path,
            // Zero would refuse every event.
            commit_timeout: positive(file.commit_timeout, "storage.commit_timeout")?,
            busy_timeout: file.busy_timeout,
            queue_capacity: non_zero_usize(file.queue_capacity, "storage.queue_capacity")?,
            max_batch_events: non_zero_usize(file.max_batch_events, "storage.max_batch_events")?,
        })
    }
}

/// How workers lease and poll.
#[derive(Debug, Clone, Serialize)]
pub struct Delivery {
    /// How long a worker holds a delivery before another may take it.
    #[serde(with = "humantime_serde")]
    pub lease: Duration,
    /// How often an idle worker looks for due deliveries.
    #[serde(with = "humantime_serde")]
    pub poll_interval: Duration,
    /// How often expired leases are returned to PENDING.
    #[serde(with = "humantime_serde")]
    pub rescue_interval: Duration,
}

impl Delivery {
    pub(super) fn from_file(file: DeliveryFile) -> Result<Delivery, ConfigError> {
        Ok(Delivery {
            lease: positive(file.lease, "delivery.lease")?,
            poll_interval: positive(file.poll_interval, "delivery.poll_interval")?,
            rescue_interval: positive(file.rescue_interval, "delivery.rescue_interval")?,
        })
    }
}
