//! Opening the configured store: `storage.url` decides the backend, and
//! everything after this file sees only the `Store` / `StoreReads` traits
//! (handler targets excepted: a handler receives its backend's own
//! transaction, so [`OpenedStore`] keeps the concrete store for them).

use std::sync::Arc;

use hookinbox_store::{
    PostgresOptions, PostgresReader, PostgresStore, PurgeCounts, PurgeProgress, RetentionPolicy,
    RewrapProgress, SqliteOptions, SqliteReader, SqliteStore, Store, StoreError, StoreReads,
};

use crate::config::{self, ConfigError, Database, Encryption, PostgresDatabase};
use crate::encryption::{self, MissingKeyFile};

/// Why the configured store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A setting it needs could not be read (the database password).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database refused, could not be reached, or could not be migrated.
    #[error("storage.url ({database})")]
    Store {
        /// The SQLite file, or the PostgreSQL URL without its password.
        database: String,
        #[source]
        source: StoreError,
    },
}

/// The configured store, opened for serving.
#[derive(Clone)]
pub enum OpenedStore {
    Sqlite(Arc<SqliteStore>),
    Postgres(Arc<PostgresStore>),
}

impl OpenedStore {
    /// The backend's name, for errors and logs.
    pub fn backend(&self) -> &'static str {
        match self {
            OpenedStore::Sqlite(_) => "sqlite",
            OpenedStore::Postgres(_) => "postgres",
        }
    }

    /// Reseals up to `limit` records under the active key (`keys rewrap`).
    pub async fn rewrap_batch(&self, limit: usize) -> Result<RewrapProgress, StoreError> {
        match self {
            OpenedStore::Sqlite(store) => store.rewrap_batch(limit).await,
            OpenedStore::Postgres(store) => store.rewrap_batch(limit).await,
        }
    }

    /// Purges up to `limit` items per rule (`purge`, the purge task).
    pub async fn purge_batch(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
        limit: usize,
    ) -> Result<PurgeProgress, StoreError> {
        match self {
            OpenedStore::Sqlite(store) => store.purge_batch(policy, now_ms, limit).await,
            OpenedStore::Postgres(store) => store.purge_batch(policy, now_ms, limit).await,
        }
    }

    /// What [`Self::purge_batch`] would purge now (`purge --dry-run`).
    pub async fn purge_preview(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
    ) -> Result<PurgeCounts, StoreError> {
        match self {
            OpenedStore::Sqlite(store) => store.purge_preview(policy, now_ms).await,
            OpenedStore::Postgres(store) => store.purge_preview(policy, now_ms).await,
        }
    }

    /// Reads for operators (the admin API and dashboard): on SQLite a
    /// connection of their own, on PostgreSQL the store's pool.
    pub fn operator_reads(&self) -> Result<Arc<dyn StoreReads>, StoreError> {
        Ok(match self {
            OpenedStore::Sqlite(store) => Arc::new(store.open_reader()?),
            OpenedStore::Postgres(store) => Arc::new(store.reader().clone()),
        })
    }

    /// The store as the service uses it.
    pub fn shared(&self) -> Arc<dyn Store> {
        match self {
            OpenedStore::Sqlite(store) => Arc::clone(store) as Arc<dyn Store>,
            OpenedStore::Postgres(store) => Arc::clone(store) as Arc<dyn Store>,
        }
    }
}

/// Opens the store for serving: creates (SQLite) and migrates the database.
/// The key ring is read first (a development key file created if its key
/// says so); without a key only `encryption.allow_plaintext` lets it open.
pub async fn open(
    settings: &config::Storage,
    encryption: &Encryption,
) -> Result<OpenedStore, OpenError> {
    let keys = encryption::load(encryption, MissingKeyFile::Create)?;
    let failed = |source| OpenError::Store {
        database: settings.database.describe(),
        source,
    };
    match &settings.database {
        Database::Sqlite { path } => {
            let mut options = SqliteOptions::new(path);
            options.busy_timeout = settings.busy_timeout;
            options.queue_capacity = settings.queue_capacity.get();
            options.max_batch_events = settings.max_batch_events.get();
            options.disk_reserve_bytes = settings.disk_reserve_bytes;
            options.keys = keys;
            // Opening creates files and runs migrations: blocking work.
            let store = tokio::task::spawn_blocking(move || SqliteStore::open(options))
                .await
                .map_err(|join| failed(StoreError::open(join.to_string())))?
                .map_err(failed)?;
            Ok(OpenedStore::Sqlite(Arc::new(store)))
        }
        Database::Postgres(postgres) => {
            let mut options = postgres_options(postgres, settings)?;
            options.keys = keys;
            let store = PostgresStore::open(options).await.map_err(failed)?;
            Ok(OpenedStore::Postgres(Arc::new(store)))
        }
    }
}

/// Opens an existing database for operator reads (no writer, no
/// migration), with the key ring, so sealed bodies and audit headers open.
pub async fn open_reader(
    settings: &config::Storage,
    encryption: &Encryption,
) -> Result<Box<dyn StoreReads>, OpenError> {
    let keys = encryption::load(encryption, MissingKeyFile::Refuse)?;
    let failed = |source| OpenError::Store {
        database: settings.database.describe(),
        source,
    };
    match &settings.database {
        Database::Sqlite { path } => Ok(Box::new(
            SqliteReader::open_with_keys(path, keys).map_err(failed)?,
        )),
        Database::Postgres(postgres) => {
            let mut options = postgres_options(postgres, settings)?;
            options.keys = keys;
            Ok(Box::new(
                PostgresReader::connect(&options).await.map_err(failed)?,
            ))
        }
    }
}

/// Brings the database to this build's schema (`hookinbox migrate`); safe
/// while other processes run or start.
pub async fn migrate(settings: &config::Storage, encryption: &Encryption) -> Result<(), OpenError> {
    let failed = |source| OpenError::Store {
        database: settings.database.describe(),
        source,
    };
    match &settings.database {
        // Opening an SQLite store migrates it; the writer stops when dropped.
        Database::Sqlite { .. } => open(settings, encryption).await.map(drop),
        Database::Postgres(postgres) => {
            let options = postgres_options(postgres, settings)?;
            hookinbox_store::postgres::migrate(&options)
                .await
                .map_err(failed)
        }
    }
}

pub(crate) fn postgres_options(
    postgres: &PostgresDatabase,
    settings: &config::Storage,
) -> Result<PostgresOptions, ConfigError> {
    let mut options = PostgresOptions::new(postgres.url.clone());
    options.password = match &postgres.password {
        Some(source) => Some(source.read("storage.password")?),
        None => None,
    };
    options.schema = postgres.schema.clone();
    options.pool_size = postgres.pool_size.get();
    options.connect_timeout = postgres.connect_timeout;
    options.queue_capacity = settings.queue_capacity.get();
    options.max_batch_events = settings.max_batch_events.get();
    Ok(options)
}

impl From<OpenError> for crate::Error {
    fn from(error: OpenError) -> crate::Error {
        match error {
            OpenError::Config(error) => crate::Error::Config(error),
            OpenError::Store { database, source } => crate::Error::Storage { database, source },
        }
    }
}
