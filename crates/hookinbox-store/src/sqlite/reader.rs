//! Read-side access to a SQLite inbox: its own connection, never the
//! writer's, so operator queries do not delay commits (WAL lets readers and
//! the writer proceed together).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::{Stats, StoreError};

/// A reader over an existing database file.
pub struct SqliteReader {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl SqliteReader {
    /// Opens an existing database for reading. A missing file is an error,
    /// not a new empty database.
    pub fn open(path: &Path) -> Result<SqliteReader, StoreError> {
        if !path.exists() {
            return Err(StoreError::Open(format!(
                "no database at {}",
                path.display()
            )));
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| StoreError::Open(format!("{}: {e}", path.display())))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(|e| StoreError::Open(e.to_string()))?;
        Ok(SqliteReader {
            path: path.to_owned(),
            conn: Mutex::new(conn),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with_conn<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, rusqlite::Error>,
    ) -> Result<T, StoreError> {
        let conn = self
            .conn
            .lock()
            .map_err(|_| StoreError::Unavailable("reader connection poisoned".into()))?;
        f(&conn).map_err(StoreError::from)
    }

    /// Inbox rows by endpoint and status.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        self.with_conn(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT endpoint_id, status, count(*) FROM inbox GROUP BY endpoint_id, status",
            )?;
            let mut stats = Stats::default();
            let rows = statement.query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                ))
            })?;
            for row in rows {
                let (endpoint, status, count) = row?;
                stats.add(&endpoint, &status, count.max(0) as u64);
            }
            Ok(stats)
        })
    }
}
