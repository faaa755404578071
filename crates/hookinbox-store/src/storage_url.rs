//! Parsing of `storage.url`.

use std::path::{Path, PathBuf};

use crate::postgres::{PostgresUrl, PostgresUrlError};

/// Where the data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageUrl {
    /// `sqlite://path/to/file.db` — relative paths are relative to `base`.
    Sqlite(PathBuf),
    /// `postgres://…` / `postgresql://…`, parsed; its `Debug` masks the
    /// password. Boxed: the driver's configuration is large.
    Postgres(Box<PostgresUrl>),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageUrlError {
    #[error("expected `sqlite://PATH` or `postgres://…`")]
    Scheme,
    #[error("`sqlite://` needs a file path")]
    EmptyPath,
    #[error("{0}")]
    Postgres(#[from] PostgresUrlError),
}

impl StorageUrl {
    /// Parses a storage URL; a relative SQLite path is resolved against `base`
    /// (the directory of the configuration file).
    pub fn parse(url: &str, base: &Path) -> Result<StorageUrl, StorageUrlError> {
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(StorageUrlError::EmptyPath);
            }
            let path = Path::new(path);
            return Ok(StorageUrl::Sqlite(if path.is_absolute() {
                path.to_owned()
            } else {
                base.join(path)
            }));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StorageUrl::Postgres(Box::new(PostgresUrl::parse(url)?)));
        }
        Err(StorageUrlError::Scheme)
    }

    /// Whether opening the store is what migrates it (SQLite: the writer
    /// migrates as it opens) rather than a step of its own that needs no
    /// store (PostgreSQL: [`crate::migrate`] under an advisory lock).
    pub fn migrates_on_open(&self) -> bool {
        matches!(self, StorageUrl::Sqlite(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_paths_resolve_against_the_config_dir() {
        let base = Path::new("/etc/hookinbox");
        assert_eq!(
            StorageUrl::parse("sqlite://inbox.db", base).unwrap(),
            StorageUrl::Sqlite("/etc/hookinbox/inbox.db".into())
        );
        assert_eq!(
            StorageUrl::parse("sqlite:///var/lib/h.db", base).unwrap(),
            StorageUrl::Sqlite("/var/lib/h.db".into())
        );
        assert_eq!(
            StorageUrl::parse("mysql://x", base),
            Err(StorageUrlError::Scheme)
        );
        assert_eq!(
            StorageUrl::parse("sqlite://", base),
            Err(StorageUrlError::EmptyPath)
        );
    }

    #[test]
    fn a_postgres_url_is_parsed_and_never_shows_its_password() {
        let base = Path::new("/etc/hookinbox");
        let url =
            StorageUrl::parse("postgres://app:s3cret@db:5432/inbox?sslmode=require", base).unwrap();
        assert!(matches!(url, StorageUrl::Postgres(_)));
        assert!(!format!("{url:?}").contains("s3cret"), "{url:?}");
        assert!(matches!(
            StorageUrl::parse("postgres://db/inbox?sslmode=sometimes", base),
            Err(StorageUrlError::Postgres(_))
        ));
    }
}
