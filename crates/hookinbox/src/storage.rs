//! Opening the configured store.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hookinbox_store::{SqliteOptions, SqliteReader, SqliteStore, StorageUrl};

use crate::config::{Config, ConfigError};

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Store(#[from] hookinbox_store::StoreError),
}

fn sqlite_path(config: &Config) -> Result<PathBuf, ConfigError> {
    match StorageUrl::parse(&config.storage.url, &config.base_dir)
        .map_err(|e| ConfigError::invalid("storage.url", e.to_string()))?
    {
        StorageUrl::Sqlite(path) => Ok(path),
        StorageUrl::Postgres(_) => Err(ConfigError::invalid(
            "storage.url",
            "PostgreSQL storage is not available in this build yet; use sqlite://PATH",
        )),
    }
}

/// Opens the store for serving (creating and migrating the database).
pub fn open(config: &Config) -> Result<Arc<SqliteStore>, StorageError> {
    let mut options = SqliteOptions::new(sqlite_path(config)?);
    options.busy_timeout = Duration::from_millis(config.storage.busy_timeout_ms);
    options.queue_capacity = config.storage.queue_capacity;
    options.max_batch_events = config.storage.max_batch_events;
    Ok(Arc::new(SqliteStore::open(options)?))
}

/// Opens an existing database for operator queries.
pub fn open_reader(config: &Config) -> Result<SqliteReader, StorageError> {
    Ok(SqliteReader::open(&sqlite_path(config)?)?)
}
