//! Store errors. Every variant is something the ingress answers with a
//! retryable 503: the event was not (or not knowably) committed, so the
//! provider must send it again.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be written or read (I/O error, disk full, locked
    /// past the busy timeout, corrupt file). The commit outcome is unknown or
    /// negative; nothing was acknowledged.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Too many requests are already waiting for a commit.
    #[error("storage overloaded: the commit queue is full")]
    Overloaded,
    /// The writer has stopped (shutdown or a fatal error).
    #[error("storage writer stopped")]
    Stopped,
    /// A library handler failed; its transaction (the event's record
    /// included) was rolled back.
    #[error("{0}")]
    Handler(String),
    /// Stored bytes do not match what was recorded about them (a payload
    /// whose SHA-256 differs from its fingerprint).
    #[error("corrupt storage: {0}")]
    Corrupt(String),
    /// The database could not be opened or migrated at start-up.
    #[error("cannot open the database: {0}")]
    Open(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError::Unavailable(error.to_string())
    }
}
