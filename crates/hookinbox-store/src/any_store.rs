//! A store of either backend, as [`crate::open`] opens it: everything the
//! service asks of a store whatever its backend, through traits, and the
//! concrete store kept for what is backend-specific by nature (a library
//! handler receives its backend's own transaction).

use std::sync::Arc;

use crate::{
    AnyReader, LearnedSecrets, Maintenance, PostgresStore, Reconciliation, SqliteStore, Store,
    StoreError, StoreReads, TargetGates,
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

    /// Pause, resume and the circuit breaker's state (see
    /// [`TargetGates`]), which both backends have.
    pub fn target_gates(&self) -> Arc<dyn TargetGates> {
        match self {
            AnyStore::Sqlite(store) => Arc::clone(store) as Arc<dyn TargetGates>,
            AnyStore::Postgres(store) => Arc::clone(store) as Arc<dyn TargetGates>,
        }
    }

    /// The secrets providers handed over in handshakes (see
    /// [`LearnedSecrets`]), which both backends keep.
    pub fn learned_secrets(&self) -> Arc<dyn LearnedSecrets> {
        match self {
            AnyStore::Sqlite(store) => Arc::clone(store) as Arc<dyn LearnedSecrets>,
            AnyStore::Postgres(store) => Arc::clone(store) as Arc<dyn LearnedSecrets>,
        }
    }

    /// Reconciliation's reads and repairs (see [`Reconciliation`]), which
    /// both backends have.
    pub fn reconciliation(&self) -> Arc<dyn Reconciliation> {
        match self {
            AnyStore::Sqlite(store) => Arc::clone(store) as Arc<dyn Reconciliation>,
            AnyStore::Postgres(store) => Arc::clone(store) as Arc<dyn Reconciliation>,
        }
    }

    /// Purging, resealing and the key check (see [`Maintenance`]).
    pub fn maintenance(&self) -> Arc<dyn Maintenance> {
        match self {
            AnyStore::Sqlite(store) => Arc::clone(store) as Arc<dyn Maintenance>,
            AnyStore::Postgres(store) => Arc::clone(store) as Arc<dyn Maintenance>,
        }
    }
}
