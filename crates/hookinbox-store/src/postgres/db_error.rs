//! How PostgreSQL failures become [`StoreError`]s. Every database or pool
//! failure is `Unavailable` (a retryable 503): a lost connection, a refused
//! one, a deadlock or serialization failure the server broke, and a COMMIT
//! whose answer never came (its outcome is unknown, so it is not a success).
//! The driver's own error types stay inside this crate.

use crate::StoreError;

/// A failure inside the PostgreSQL store, before it is reported.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PgError {
    #[error(transparent)]
    Db(#[from] tokio_postgres::Error),
    #[error("no database connection: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    /// Something the store's own invariants rule out (see the message).
    #[error("{0}")]
    Invariant(String),
    /// Already a store error (a sealed record that did not open, say).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<PgError> for StoreError {
    fn from(error: PgError) -> StoreError {
        match error {
            PgError::Store(error) => error,
            other => StoreError::unavailable(other),
        }
    }
}
