//! Store errors. Every variant is something the ingress answers with a
//! retryable 503: the event was not (or not knowably) committed, so the
//! provider must send it again.
//!
//! The cause travels as a boxed `dyn Error` (`#[source]`), never as a
//! backend's own type: callers match on the variant, and a backend can
//! change (SQLite, PostgreSQL) without changing this crate's API. The
//! cause's text is also part of the message, because the service logs a
//! store error on one line (`%error`) and that line must say what failed.

/// Any error, boxed; the cause inside a [`StoreError`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be written or read (I/O error, disk full, locked
    /// past the busy timeout, corrupt file, connection lost or refused). The
    /// commit outcome is unknown or negative; nothing was acknowledged.
    #[error("storage unavailable: {0}")]
    Unavailable(#[source] BoxError),
    /// Too many requests are already waiting for a commit.
    #[error("storage overloaded: the commit queue is full")]
    Overloaded,
    /// The writer has stopped (shutdown or a fatal error).
    #[error("storage writer stopped")]
    Stopped,
    /// A library handler failed; its transaction (the event's record
    /// included) was rolled back. The text is the handler's own.
    #[error("{0}")]
    Handler(String),
    /// Stored bytes do not match what was recorded about them: a payload
    /// whose SHA-256 differs from its fingerprint, or a sealed record that
    /// does not open (its key is not in the ring, a wrong key, a changed
    /// byte, a record moved from another row). The message names the inbox
    /// id (and the key id), never a key or the bytes.
    #[error("corrupt storage: {0}")]
    Corrupt(String),
    /// Records are to be sealed (`rewrap_batch`), but the store was opened
    /// without encryption keys.
    #[error("no encryption keys are configured")]
    NoEncryptionKeys,
    /// The database could not be opened or migrated at start-up.
    #[error("cannot open the database: {0}")]
    Open(#[source] BoxError),
}

impl StoreError {
    /// The database failed under an operation; `cause` says how.
    pub fn unavailable(cause: impl Into<BoxError>) -> StoreError {
        StoreError::Unavailable(cause.into())
    }

    /// The database could not be opened or migrated; `cause` says why.
    pub fn open(cause: impl Into<BoxError>) -> StoreError {
        StoreError::Open(cause.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_is_the_source_and_is_named_in_the_message() {
        let io = std::io::Error::other("disk full");
        let error = StoreError::unavailable(io);
        assert_eq!(error.to_string(), "storage unavailable: disk full");
        let source = std::error::Error::source(&error).expect("a source");
        assert_eq!(source.to_string(), "disk full");
        assert!(source.downcast_ref::<std::io::Error>().is_some());
    }
}
