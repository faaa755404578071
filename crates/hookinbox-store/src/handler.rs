//! The library handler: business logic that commits in the same SQLite
//! transaction as the event's record, so a logical event changes business
//! state exactly once (effectively-once), whatever crashes or retries.

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
