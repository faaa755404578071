//! `[storage]` and `[delivery]`, checked.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookinbox_store::{PostgresUrl, StorageUrl};
use secrecy::ExposeSecret;
use serde::{Serialize, Serializer};

use super::checks::{non_zero_usize, positive};
use super::file::{DeliveryFile, StorageFile};
use super::secret_source::{SecretFields, SecretSource};
use super::ConfigError;

/// Where events are stored, and the limits of its writer.
#[derive(Debug, Clone, Serialize)]
pub struct Storage {
    /// The database (`storage.url` and, for PostgreSQL, its connection
    /// settings).
    #[serde(flatten)]
    pub database: Database,
    /// Longest a request waits for its commit (then 503).
    #[serde(with = "humantime_serde")]
    pub commit_timeout: Duration,
    /// SQLite: how long a commit waits for the write lock another process
    /// holds.
    #[serde(with = "humantime_serde")]
    pub busy_timeout: Duration,
    /// Writes that may wait for the writer at once (then 503).
    pub queue_capacity: NonZeroUsize,
    /// Events one transaction takes at most.
    pub max_batch_events: NonZeroUsize,
    /// SQLite: `/readyz` fails while the database's filesystem has fewer
    /// bytes free.
    pub min_free_disk_bytes: u64,
    /// SQLite: bytes kept free for SQLite; new bodies are refused under it.
    pub disk_reserve_bytes: u64,
}

/// The database behind `storage.url`.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Database {
    /// An SQLite file (the embedded default), resolved against the config
    /// file's directory.
    Sqlite {
        /// The database file.
        #[serde(rename = "url", serialize_with = "as_sqlite_url")]
        path: PathBuf,
    },
    /// A PostgreSQL server shared by many processes.
    Postgres(Box<PostgresDatabase>),
}

/// `storage.url = "postgres://…"` and its settings.
#[derive(Debug, Clone, Serialize)]
pub struct PostgresDatabase {
    /// The URL; shown (and logged) without its password.
    #[serde(serialize_with = "as_display")]
    pub url: PostgresUrl,
    /// Where the password comes from when it is not in the URL.
    pub password: Option<SecretSource>,
    /// The schema holding the tables; the server's default when unset.
    pub schema: Option<String>,
    /// Most connections this process opens.
    pub pool_size: NonZeroUsize,
    /// Longest wait to connect, or for a free pooled connection.
    #[serde(with = "humantime_serde")]
    pub connect_timeout: Duration,
}

fn as_sqlite_url<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format!("sqlite://{}", path.display()))
}

fn as_display<S: Serializer>(url: &PostgresUrl, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(url)
}

impl Database {
    /// What the database is, for log lines and errors: the SQLite file, or
    /// the PostgreSQL URL without its password.
    pub fn describe(&self) -> String {
        match self {
            Database::Sqlite { path } => path.display().to_string(),
            Database::Postgres(postgres) => postgres.url.to_string(),
        }
    }
}

impl Storage {
    pub(super) fn from_file(file: StorageFile, base_dir: &Path) -> Result<Storage, ConfigError> {
        let database = match StorageUrl::parse(file.url.expose_secret(), base_dir)
            .map_err(|e| ConfigError::invalid("storage.url", e.to_string()))?
        {
            StorageUrl::Sqlite(path) => {
                for (set, field) in [
                    (file.password_env.is_some(), "storage.password_env"),
                    (file.password_file.is_some(), "storage.password_file"),
                    (file.schema.is_some(), "storage.schema"),
                ] {
                    if set {
                        return Err(ConfigError::invalid(
                            field,
                            "applies to a postgres:// storage.url only",
                        ));
                    }
                }
                Database::Sqlite { path }
            }
            StorageUrl::Postgres(url) => {
                let password = SecretSource::from_fields(
                    SecretFields {
                        name: "password",
                        inline: None,
                        env: file.password_env.as_deref(),
                        file: file.password_file.as_deref(),
                    },
                    "storage",
                    base_dir,
                )?;
                if password.is_some() && url.has_password() {
                    return Err(ConfigError::invalid(
                        "storage.url",
                        "has a password and storage.password_env/password_file is set too: keep one",
                    ));
                }
                if let Some(schema) = &file.schema {
                    check_schema(schema)?;
                }
                Database::Postgres(Box::new(PostgresDatabase {
                    url: *url,
                    password,
                    schema: file.schema,
                    pool_size: non_zero_usize(file.pool_size, "storage.pool_size")?,
                    connect_timeout: positive(file.connect_timeout, "storage.connect_timeout")?,
                }))
            }
        };
        Ok(Storage {
            database,
            // Zero would refuse every event.
            commit_timeout: positive(file.commit_timeout, "storage.commit_timeout")?,
            busy_timeout: file.busy_timeout,
            queue_capacity: non_zero_usize(file.queue_capacity, "storage.queue_capacity")?,
            max_batch_events: non_zero_usize(file.max_batch_events, "storage.max_batch_events")?,
            min_free_disk_bytes: file.min_free_disk_bytes,
            disk_reserve_bytes: file.disk_reserve_bytes,
        })
    }
}

/// The schema name is spliced into SQL and a NOTIFY channel name, so only
/// plain identifiers pass (the store checks again when it connects).
fn check_schema(schema: &str) -> Result<(), ConfigError> {
    let valid = (1..=40).contains(&schema.len())
        && schema
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !schema.starts_with(|c: char| c.is_ascii_digit())
        && !schema.starts_with("pg_");
    if valid {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            "storage.schema",
            "use 1 to 40 lowercase letters, digits and _, not starting with a digit or pg_",
        ))
    }
}

/// How workers lease and poll.
#[derive(Debug, Clone, Serialize)]
pub struct Delivery {
    /// How long a worker holds a delivery before another may take it.
    #[serde(with = "humantime_serde")]
    pub lease: Duration,
    /// How often an idle worker looks for due deliveries.
    #[serde(with = "humantime_serde")]
    pub poll_interval: Duration,
    /// How often expired leases are returned to PENDING.
    #[serde(with = "humantime_serde")]
    pub rescue_interval: Duration,
}

impl Delivery {
    pub(super) fn from_file(file: DeliveryFile) -> Result<Delivery, ConfigError> {
        Ok(Delivery {
            lease: positive(file.lease, "delivery.lease")?,
            poll_interval: positive(file.poll_interval, "delivery.poll_interval")?,
            rescue_interval: positive(file.rescue_interval, "delivery.rescue_interval")?,
        })
    }
}
