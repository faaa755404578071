//! A store of either backend, as [`crate::open`] opens it: everything the
//! service asks of a store whatever its backend, through traits, and the
//! concrete store kept for what is backend-specific by nature (a library
//! handler receives its backend's own transaction).

use std::sync::Arc;

use crate::{
    AnyReader, KeyCheck, KeyCheckMode, PostgresStore, PurgeCounts, PurgeProgress, RetentionPolicy,
    RewrapProgress, SqliteStore, Store, StoreError, StoreReads,
};

/// An opened store (see [`crate::open`]).
#[derive(Clone)]
pub enum AnyStore {
    Sqlite(Arc<SqliteStore>),
    Postgres(Arc<PostgresStore>),
}

impl AnyStore {
    /// The backend's name, for errors and logs.
    pub fn backend(&self) -> &'static str {
        match self {
            AnyStore::Sqlite(_) => "sqlite",
            AnyStore::Postgres(_) => "postgres",
        }
    }

    /// The store as the service uses it.
    pub fn shared(&self) -> Arc<dyn Store> {
        match self {
            AnyStore::Sqlite(store) => Arc::clone(store) as Arc<dyn Store>,
            AnyStore::Postgres(store) => Arc::clone(store) as Arc<dyn Store>,
        }
    }

    /// Reads for operators (the admin API and dashboard): on SQLite a
    /// connection of their own (`SqliteStore::open_reader`), on PostgreSQL
    /// the store's pool.
    pub fn operator_reads(&self) -> Result<Arc<dyn StoreReads>, StoreError> {
        Ok(match self {
            AnyStore::Sqlite(store) => Arc::new(store.open_reader()?),
            AnyStore::Postgres(store) => Arc::new(store.reader().clone()),
        })
    }

    /// The reader the store itself reads with (its connection on SQLite,
    /// its pool on PostgreSQL).
    pub fn reader(&self) -> AnyReader {
        match self {
            AnyStore::Sqlite(store) => AnyReader::Sqlite(store.reader().as_ref().clone()),
            AnyStore::Postgres(store) => AnyReader::Postgres(store.reader().clone()),
        }
    }

    /// Reseals up to `limit` records under the active key (`keys rewrap`).
    pub async fn rewrap_batch(&self, limit: usize) -> Result<RewrapProgress, StoreError> {
        match self {
            AnyStore::Sqlite(store) => store.rewrap_batch(limit).await,
            AnyStore::Postgres(store) => store.rewrap_batch(limit).await,
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
            AnyStore::Sqlite(store) => store.purge_batch(policy, now_ms, limit).await,
            AnyStore::Postgres(store) => store.purge_batch(policy, now_ms, limit).await,
        }
    }

    /// What [`Self::purge_batch`] would purge now (`purge --dry-run`).
    pub async fn purge_preview(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
    ) -> Result<PurgeCounts, StoreError> {
        match self {
            AnyStore::Sqlite(store) => store.purge_preview(policy, now_ms).await,
            AnyStore::Postgres(store) => store.purge_preview(policy, now_ms).await,
        }
    }

    /// Checks the ring the store was opened with against the database.
    pub async fn check_keys(&self, mode: KeyCheckMode) -> Result<KeyCheck, StoreError> {
        match self {
            AnyStore::Sqlite(store) => store.check_keys(mode).await,
            AnyStore::Postgres(store) => store.check_keys(mode).await,
        }
    }
}
