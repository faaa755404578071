//! What [`crate::open`] needs besides the storage URL: the key ring and
//! the tuning of whichever backend the URL names, in one struct, so the
//! caller never asks which backend it is opening.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;

use crate::{EncryptionKeys, PostgresOptions, PostgresUrl, SqliteOptions};

/// Options for opening a store; a field that does not apply to the
/// backend the URL names is ignored. [`StoreOptions::default`] has each
/// backend's own defaults.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Seal raw bodies and audit headers at rest under the active key, and
    /// open sealed ones with the key their row names. `None`: new records
    /// are stored plain.
    pub keys: Option<Arc<EncryptionKeys>>,
    /// Writes that may wait for the writer (SQLite) or the ingress batcher
    /// (PostgreSQL); beyond it requests get 503.
    pub queue_capacity: usize,
    /// Most events in one transaction.
    pub max_batch_events: usize,
    /// SQLite: least time between the starts of two commits (see
    /// [`SqliteOptions::commit_interval`]).
    pub commit_interval: Duration,
    /// SQLite: how long a commit waits for a lock another process holds.
    pub busy_timeout: Duration,
    /// SQLite: bytes kept free on the payload log's filesystem.
    pub disk_reserve_bytes: u64,
    /// PostgreSQL: the password, when it is not in the URL (it overrides
    /// the URL's).
    pub password: Option<SecretString>,
    /// PostgreSQL: the schema holding hookinbox's tables; `None`: the
    /// server's default.
    pub schema: Option<String>,
    /// PostgreSQL: most connections this process opens.
    pub pool_size: usize,
    /// PostgreSQL: longest wait to connect, or for a free pooled connection.
    pub connect_timeout: Duration,
    /// PostgreSQL: shown in `pg_stat_activity`; `None`: `hookinbox`.
    pub application_name: Option<String>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        let sqlite = SqliteOptions::new(PathBuf::new());
        StoreOptions {
            keys: None,
            queue_capacity: sqlite.queue_capacity,
            max_batch_events: sqlite.max_batch_events,
            commit_interval: sqlite.commit_interval,
            busy_timeout: sqlite.busy_timeout,
            disk_reserve_bytes: sqlite.disk_reserve_bytes,
            password: None,
            schema: None,
            pool_size: PostgresOptions::DEFAULT_POOL_SIZE,
            connect_timeout: PostgresOptions::DEFAULT_CONNECT_TIMEOUT,
            application_name: None,
        }
    }
}

impl StoreOptions {
    /// The SQLite store's options for the database file at `path`.
    pub fn sqlite(&self, path: impl Into<PathBuf>) -> SqliteOptions {
        let mut options = SqliteOptions::new(path);
        options.keys = self.keys.clone();
        options.queue_capacity = self.queue_capacity;
        options.max_batch_events = self.max_batch_events;
        options.commit_interval = self.commit_interval;
        options.busy_timeout = self.busy_timeout;
        options.disk_reserve_bytes = self.disk_reserve_bytes;
        options
    }

    /// The PostgreSQL store's (and reader's) options for `url`.
    pub fn postgres(&self, url: &PostgresUrl) -> PostgresOptions {
        let mut options = PostgresOptions::new(url.clone());
        options.keys = self.keys.clone();
        options.queue_capacity = self.queue_capacity;
        options.max_batch_events = self.max_batch_events;
        options.password = self.password.clone();
        options.schema = self.schema.clone();
        options.pool_size = self.pool_size;
        options.connect_timeout = self.connect_timeout;
        if let Some(name) = &self.application_name {
            options.application_name = name.clone();
        }
        options
    }
}
