//! Opening the configured store: `storage.url` decides the backend, and
//! everything after this file sees only the `Store` / `StoreReads` traits
//! (handler targets excepted: a handler receives its backend's own
//! transaction, so [`OpenedStore`] keeps the concrete store for them).

use std::sync::Arc;

use hookinbox_store::{
    EncryptionKeys, KeyCheck, KeyCheckMode, KeyRingMismatch, PostgresOptions, PostgresReader,
    PostgresStore, PurgeCounts, PurgeProgress, RetentionPolicy, RewrapProgress, SqliteOptions,
    SqliteReader, SqliteStore, Store, StoreError, StoreReads,
};

use crate::config::{self, ConfigError, Database, Encryption, PostgresDatabase};
use crate::secrets::encryption::{self, MissingKeyFile};

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
    /// The key ring does not fit the database (docs/architecture.md §6):
    /// a key id's check value does not open under its configured key, or
    /// rows are sealed under a key id the ring does not have.
    #[error("encryption: the key ring does not fit the database at storage.url ({database})")]
    Keys {
        /// The SQLite file, or the PostgreSQL URL without its password.
        database: String,
        /// Each mismatch, naming its key id.
        #[source]
        source: KeyRingMismatch,
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

    /// Checks the ring the store was opened with against the database
    /// (see [`open`]).
    pub async fn check_keys(&self, mode: KeyCheckMode) -> Result<KeyCheck, StoreError> {
        match self {
            OpenedStore::Sqlite(store) => store.check_keys(mode).await,
            OpenedStore::Postgres(store) => store.check_keys(mode).await,
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
/// says so, and the database is empty); without a key only
/// `encryption.allow_plaintext` lets it open. Then the ring is checked
/// against the database, and the check values of new key ids recorded
/// (docs/architecture.md §6): a ring that does not fit is refused, naming
/// the key id.
pub async fn open(
    settings: &config::Storage,
    encryption: &Encryption,
) -> Result<OpenedStore, OpenError> {
    let database = settings.database.describe();
    if let Some(absent) = encryption::absent_key_file(encryption) {
        let bare = open_with_keys(settings, None).await?;
        let check = bare
            .check_keys(KeyCheckMode::Verify)
            .await
            .map_err(|source| OpenError::Store {
                database: database.clone(),
                source,
            });
        // Dropping an SQLite store joins its writer thread.
        let _ = tokio::task::spawn_blocking(move || drop(bare)).await;
        if check?.holds_data {
            return Err(absent.refusal(&database).into());
        }
    }
    let keys = encryption::load(encryption, MissingKeyFile::Create)?;
    let store = open_with_keys(settings, keys).await?;
    let check = store
        .check_keys(KeyCheckMode::Record)
        .await
        .map_err(|source| OpenError::Store {
            database: database.clone(),
            source,
        })?;
    log_recorded(&check);
    check
        .matched()
        .map_err(|source| OpenError::Keys { database, source })?;
    Ok(store)
}

/// Says which key ids got their first check value: from now on a start
/// with another key under one of them is refused.
fn log_recorded(check: &KeyCheck) {
    if !check.recorded.is_empty() {
        tracing::info!(
            message = "Recorded encryption key check values: starts with another key under these ids will be refused.",
            key_ids = %check.recorded.join(", "),
        );
    }
}

/// Opens the store with `keys`, unchecked.
async fn open_with_keys(
    settings: &config::Storage,
    keys: Option<Arc<EncryptionKeys>>,
) -> Result<OpenedStore, OpenError> {
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
/// A ring that does not fit the database is refused, as by [`open`]
/// (nothing is recorded: a reader writes nothing).
pub async fn open_reader(
    settings: &config::Storage,
    encryption: &Encryption,
) -> Result<Box<dyn StoreReads>, OpenError> {
    let reader = open_keyed_reader(settings, encryption).await?;
    reader
        .check()
        .await
        .map_err(|source| OpenError::Store {
            database: settings.database.describe(),
            source,
        })?
        .matched()
        .map_err(|source| OpenError::Keys {
            database: settings.database.describe(),
            source,
        })?;
    Ok(reader.into_reads())
}

/// `hookinbox keys check`: the configured ring against the database, read
/// only. `Ok(None)`: a development key file is missing and the database
/// is empty, so there is nothing to check yet (`serve` will create it).
pub async fn check_keys(
    settings: &config::Storage,
    encryption: &Encryption,
) -> Result<Option<KeyCheck>, OpenError> {
    if let Some(absent) = encryption::absent_key_file(encryption) {
        let check = open_reader_with_keys(settings, None)
            .await?
            .check()
            .await
            .map_err(|source| OpenError::Store {
                database: settings.database.describe(),
                source,
            })?;
        if check.holds_data {
            return Err(absent.refusal(&settings.database.describe()).into());
        }
        return Ok(None);
    }
    let reader = open_keyed_reader(settings, encryption).await?;
    reader
        .check()
        .await
        .map(Some)
        .map_err(|source| OpenError::Store {
            database: settings.database.describe(),
            source,
        })
}

/// A reader of either backend, before it is boxed, so its key check can
/// be asked.
enum ConcreteReader {
    Sqlite(SqliteReader),
    Postgres(PostgresReader),
}

impl ConcreteReader {
    async fn check(&self) -> Result<KeyCheck, StoreError> {
        match self {
            ConcreteReader::Sqlite(reader) => {
                let reader = reader.clone();
                tokio::task::spawn_blocking(move || reader.check_keys())
                    .await
                    .map_err(StoreError::unavailable)?
            }
            ConcreteReader::Postgres(reader) => reader.check_keys().await,
        }
    }

    fn into_reads(self) -> Box<dyn StoreReads> {
        match self {
            ConcreteReader::Sqlite(reader) => Box::new(reader),
            ConcreteReader::Postgres(reader) => Box::new(reader),
        }
    }
}

/// A reader with the configured ring (a missing key file is an error).
async fn open_keyed_reader(
    settings: &config::Storage,
    encryption: &Encryption,
) -> Result<ConcreteReader, OpenError> {
    let keys = encryption::load(encryption, MissingKeyFile::Refuse)?;
    open_reader_with_keys(settings, keys).await
}

async fn open_reader_with_keys(
    settings: &config::Storage,
    keys: Option<Arc<EncryptionKeys>>,
) -> Result<ConcreteReader, OpenError> {
    let failed = |source| OpenError::Store {
        database: settings.database.describe(),
        source,
    };
    match &settings.database {
        Database::Sqlite { path } => Ok(ConcreteReader::Sqlite(
            SqliteReader::open_with_keys(path, keys).map_err(failed)?,
        )),
        Database::Postgres(postgres) => {
            let mut options = postgres_options(postgres, settings)?;
            options.keys = keys;
            Ok(ConcreteReader::Postgres(
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
            OpenError::Keys { database, source } => crate::Error::Keys { database, source },
        }
    }
}
