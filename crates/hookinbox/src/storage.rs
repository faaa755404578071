//! Opening the configured store.

use std::sync::Arc;

use hookinbox_store::{SqliteOptions, SqliteReader, SqliteStore};

use crate::config;

/// Opens the store for serving (creating and migrating the database).
pub fn open(settings: &config::Storage) -> Result<Arc<SqliteStore>, hookinbox_store::StoreError> {
    let mut options = SqliteOptions::new(&settings.sqlite_path);
    options.busy_timeout = settings.busy_timeout;
    options.queue_capacity = settings.queue_capacity.get();
    options.max_batch_events = settings.max_batch_events.get();
    Ok(Arc::new(SqliteStore::open(options)?))
}

/// Opens an existing database for operator queries.
pub fn open_reader(
    settings: &config::Storage,
) -> Result<SqliteReader, hookinbox_store::StoreError> {
    SqliteReader::open(&settings.sqlite_path)
}
