//! Opening the configured store: `[storage]` and the key ring become a
//! storage URL and [`StoreOptions`], [`hookinbox_store::open`] picks the
//! backend, and everything after this file sees only the store's traits
//! (handler targets excepted: a handler receives its backend's own
//! transaction, so [`AnyStore`] keeps the concrete store for them). What
//! is the service's own is the key ring's policy: a development key file
//! created only for an empty database, and a ring that does not fit the
//! database refused before serving (docs/architecture.md §6).

use std::sync::Arc;

use hookinbox_store::{
    AnyReader, AnyStore, EncryptionKeys, KeyCheck, KeyCheckMode, KeyRingMismatch, StorageUrl,
    StoreError, StoreOptions, StoreReads,
};

use crate::config::{self, ConfigError, Database, Encryption};
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
) -> Result<AnyStore, OpenError> {
    let database = settings.database.describe();
    if let Some(absent) = encryption::absent_key_file(encryption) {
        let bare = open_with_keys(settings, None).await?;
        let check = bare
            .maintenance()
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
        .maintenance()
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
) -> Result<AnyStore, OpenError> {
    let (url, options) = store_options(settings, keys)?;
    hookinbox_store::open(&url, options)
        .await
        .map_err(|source| OpenError::Store {
            database: settings.database.describe(),
            source,
        })
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
        .check_keys()
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
            .check_keys()
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
        .check_keys()
        .await
        .map(Some)
        .map_err(|source| OpenError::Store {
            database: settings.database.describe(),
            source,
        })
}

/// A reader with the configured ring (a missing key file is an error).
async fn open_keyed_reader(
    settings: &config::Storage,
    encryption: &Encryption,
) -> Result<AnyReader, OpenError> {
    let keys = encryption::load(encryption, MissingKeyFile::Refuse)?;
    open_reader_with_keys(settings, keys).await
}

async fn open_reader_with_keys(
    settings: &config::Storage,
    keys: Option<Arc<EncryptionKeys>>,
) -> Result<AnyReader, OpenError> {
    let (url, options) = store_options(settings, keys)?;
    hookinbox_store::open_reader(&url, &options)
        .await
        .map_err(|source| OpenError::Store {
            database: settings.database.describe(),
            source,
        })
}

/// Brings the database to this build's schema (`hookinbox migrate`); safe
/// while other processes run or start. Where opening is what migrates
/// (SQLite), the store is opened as `serve` opens it, key ring check
/// included.
pub async fn migrate(settings: &config::Storage, encryption: &Encryption) -> Result<(), OpenError> {
    let (url, options) = store_options(settings, None)?;
    if url.migrates_on_open() {
        return open(settings, encryption).await.map(drop);
    }
    hookinbox_store::migrate(&url, &options)
        .await
        .map_err(|source| OpenError::Store {
            database: settings.database.describe(),
            source,
        })
}

/// `[storage]` as the store crate opens it: the URL, and the options
/// with `keys` (the password read from its source).
pub(crate) fn store_options(
    settings: &config::Storage,
    keys: Option<Arc<EncryptionKeys>>,
) -> Result<(StorageUrl, StoreOptions), ConfigError> {
    let mut options = StoreOptions {
        keys,
        queue_capacity: settings.queue_capacity.get(),
        max_batch_events: settings.max_batch_events.get(),
        commit_interval: settings.commit_interval,
        busy_timeout: settings.busy_timeout,
        disk_reserve_bytes: settings.disk_reserve_bytes,
        ..StoreOptions::default()
    };
    let url = match &settings.database {
        Database::Sqlite { path } => StorageUrl::Sqlite(path.clone()),
        Database::Postgres(postgres) => {
            options.password = match &postgres.password {
                Some(source) => Some(source.read("storage.password")?),
                None => None,
            };
            options.schema = postgres.schema.clone();
            options.pool_size = postgres.pool_size.get();
            options.connect_timeout = postgres.connect_timeout;
            StorageUrl::Postgres(Box::new(postgres.url.clone()))
        }
    };
    Ok((url, options))
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
