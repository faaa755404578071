//! A reader of either backend, as [`crate::open_reader`] opens it: reads
//! only (no writer, no migration), for operator commands.

use crate::{KeyCheck, PostgresReader, SqliteReader, StoreError, StoreReads};

/// An opened reader (see [`crate::open_reader`]).
#[derive(Clone)]
pub enum AnyReader {
    Sqlite(SqliteReader),
    Postgres(PostgresReader),
}

impl AnyReader {
    /// Checks the reader's key ring against the database, read only (see
    /// `key_check`).
    pub async fn check_keys(&self) -> Result<KeyCheck, StoreError> {
        match self {
            AnyReader::Sqlite(reader) => {
                let reader = reader.clone();
                tokio::task::spawn_blocking(move || reader.check_keys())
                    .await
                    .map_err(StoreError::unavailable)?
            }
            AnyReader::Postgres(reader) => reader.check_keys().await,
        }
    }

    /// The reader behind the operator-read trait.
    pub fn into_reads(self) -> Box<dyn StoreReads> {
        match self {
            AnyReader::Sqlite(reader) => Box::new(reader),
            AnyReader::Postgres(reader) => Box::new(reader),
        }
    }
}
