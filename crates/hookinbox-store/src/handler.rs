//! The library handler: business logic that commits in the same database
//! transaction as the event's record, so a logical event changes business
//! state exactly once (effectively-once), whatever crashes or retries.
//!
//! A handler receives the backend's own open transaction, so it is written
//! per backend: [`SqliteHandler`] runs synchronously on the SQLite writer
//! thread with its connection; [`PostgresHandler`] runs async with the
//! tokio-postgres transaction. A type may implement both and then works on
//! either store.

use async_trait::async_trait;

/// The event a handler sees.
#[derive(Debug, Clone, Copy)]
pub struct HandledEvent<'a> {
    pub inbox_id: &'a str,
    pub endpoint_id: &'a str,
    pub provider_event_id: &'a str,
    pub event_type: Option<&'a str>,
    pub payload: &'a [u8],
}

/// A handler refused or failed; the whole transaction (event record
/// included) rolls back, so the provider's retry can apply it later.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("handler failed: {0}")]
pub struct HandlerError(pub String);

/// What delivering to a library handler did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandlerDelivery {
    /// The handler's change and DELIVERED committed together.
    Applied,
    /// The lease was no longer this worker's (it expired and was reclaimed):
    /// the handler did not run, and whoever holds the delivery now will.
    LeaseLost,
}

/// Business logic run inside the store's transaction, on the writer thread:
/// keep it short, and do no I/O other than through `conn`.
pub trait SqliteHandler: Send + Sync + 'static {
    /// Applies the business change of one new event. An error rolls back the
    /// change and the event's record together.
    fn handle(
        &self,
        conn: &rusqlite::Connection,
        event: &HandledEvent<'_>,
    ) -> Result<(), HandlerError>;
}

/// Business logic run inside the PostgreSQL store's transaction. The
/// transaction holds a pooled connection (and, for a delivery, the
/// delivery's row lock) while it runs: keep it short, and do no I/O other
/// than through `tx`.
#[async_trait]
pub trait PostgresHandler: Send + Sync + 'static {
    /// Applies the business change of one new event. An error rolls back the
    /// change and the event's record together.
    async fn handle(
        &self,
        tx: &tokio_postgres::Transaction<'_>,
        event: &HandledEvent<'_>,
    ) -> Result<(), HandlerError>;
}
