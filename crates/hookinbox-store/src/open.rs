//! The one place a storage URL and [`StoreOptions`] become an opened
//! backend (docs/architecture.md §4): the service, its commands and the
//! store's own tests all open through here.

use std::sync::Arc;

use crate::{
    postgres, AnyReader, AnyStore, PostgresReader, PostgresStore, SqliteReader, SqliteStore,
    StorageUrl, StoreError, StoreOptions,
};

/// Opens the store `url` names for serving: creates (SQLite) and migrates
/// the database, and starts its writer (SQLite) or ingress batcher
/// (PostgreSQL). Must be called inside a Tokio runtime. The key ring in
/// `options` is not checked against the database here: ask
/// `check_keys` before serving.
pub async fn open(url: &StorageUrl, options: StoreOptions) -> Result<AnyStore, StoreError> {
    match url {
        StorageUrl::Sqlite(path) => {
            let options = options.sqlite(path);
            // Opening creates files and runs migrations: blocking work.
            let store = tokio::task::spawn_blocking(move || SqliteStore::open(options))
                .await
                .map_err(|join| StoreError::open(join.to_string()))??;
            Ok(AnyStore::Sqlite(Arc::new(store)))
        }
        StorageUrl::Postgres(url) => {
            let store = PostgresStore::open(options.postgres(url)).await?;
            Ok(AnyStore::Postgres(Arc::new(store)))
        }
    }
}

/// Opens an existing database for reads only (no writer, no migration;
/// a missing SQLite file is an error, not a new database), with the key
/// ring in `options`, unchecked.
pub async fn open_reader(
    url: &StorageUrl,
    options: &StoreOptions,
) -> Result<AnyReader, StoreError> {
    match url {
        StorageUrl::Sqlite(path) => Ok(AnyReader::Sqlite(SqliteReader::open_with_keys(
            path,
            options.keys.clone(),
        )?)),
        StorageUrl::Postgres(url) => Ok(AnyReader::Postgres(
            PostgresReader::connect(&options.postgres(url)).await?,
        )),
    }
}

/// Brings the database to this build's schema and nothing else: safe while
/// other processes run or start. On SQLite, where opening is what
/// migrates, the store is opened and closed again.
pub async fn migrate(url: &StorageUrl, options: &StoreOptions) -> Result<(), StoreError> {
    match url {
        StorageUrl::Sqlite(_) => {
            let store = open(url, options.clone()).await?;
            // Dropping an SQLite store joins its writer thread.
            tokio::task::spawn_blocking(move || drop(store))
                .await
                .map_err(StoreError::unavailable)
        }
        StorageUrl::Postgres(url) => postgres::migrate(&options.postgres(url)).await,
    }
}
