//! `[storage]` and `[delivery]`, as parsed (the `*File`
//! structs) and checked.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookinbox_store::{PostgresOptions, PostgresUrl, SqliteOptions, StorageUrl};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize, Serializer};

use super::checks::{at_most, non_zero_usize, positive};
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
    /// SQLite: least time between the starts of two commits; a commit
    /// that would start sooner waits for more events until then.
    #[serde(with = "humantime_serde")]
    pub commit_interval: Duration,
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
            commit_interval: at_most(
                file.commit_interval,
                MAX_COMMIT_INTERVAL,
                "storage.commit_interval",
            )?,
            min_free_disk_bytes: file.min_free_disk_bytes,
            disk_reserve_bytes: file.disk_reserve_bytes,
        })
    }
}

/// The longest `storage.commit_interval`: past it an ack would wait
/// longer than the few milliseconds it is there to save.
const MAX_COMMIT_INTERVAL: Duration = Duration::from_millis(50);

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

/// `[storage]`: where events are stored.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StorageFile {
    /// `sqlite://PATH` (created if missing; relative to this file's
    /// directory) or `postgres://USER@HOST:PORT/DB` (`?sslmode=…`).
    // A secret until parsed: a PostgreSQL URL may carry the password.
    #[serde(
        default = "default_storage_url",
        serialize_with = "super::printable::url_without_password"
    )]
    pub url: SecretString,
    /// PostgreSQL: the name of an environment variable holding the
    /// password, when it is not in the URL.
    pub password_env: Option<String>,
    /// PostgreSQL: a file holding the password (trailing newline trimmed;
    /// relative to this file).
    pub password_file: Option<PathBuf>,
    /// PostgreSQL: the schema holding hookinbox's tables (created by the
    /// migration); the server's default when unset.
    pub schema: Option<String>,
    /// PostgreSQL: most connections this process opens.
    #[serde(default = "default_pool_size")]
    pub pool_size: usize,
    /// PostgreSQL: longest wait to connect, or for a free pooled connection.
    #[serde(default = "default_connect_timeout", with = "humantime_serde")]
    pub connect_timeout: Duration,
    /// Longest a request waits for its commit (queue included). Past it the
    /// answer is 503 + `Retry-After`: the outcome is unknown, and the
    /// provider's retry is deduplicated. A frozen or very slow disk then
    /// looks to providers like an outage they retry, not like a timeout of
    /// their own.
    #[serde(default = "default_commit_timeout", with = "humantime_serde")]
    pub commit_timeout: Duration,
    /// How long a commit waits for the database's write lock while another
    /// process holds it before answering 503.
    #[serde(default = "default_busy_timeout", with = "humantime_serde")]
    pub busy_timeout: Duration,
    /// Writes that may wait for the writer at once; beyond it requests get 503.
    #[serde(default = "default_queue_capacity")]
    pub queue_capacity: usize,
    /// Most events committed in one transaction.
    #[serde(default = "default_max_batch_events")]
    pub max_batch_events: usize,
    /// SQLite: least time between the starts of two commits. A commit that
    /// would start sooner waits until then for more events, so the two
    /// syncs of a commit serve several events instead of one: far less CPU
    /// at a moderate rate, for at most this much more on an ack. `0ms`:
    /// commit at once. At most 50ms.
    #[serde(default = "default_commit_interval", with = "humantime_serde")]
    pub commit_interval: Duration,
    /// SQLite: `/readyz` fails (`disk`) while the filesystem holding the
    /// database has fewer bytes free than this. Not checked for PostgreSQL,
    /// whose disk is the server's.
    #[serde(default = "default_min_free_disk_bytes")]
    pub min_free_disk_bytes: u64,
    /// SQLite: new bodies are refused (503) while writing them would leave
    /// fewer bytes free, so SQLite keeps room to checkpoint and to purge on
    /// a full disk. 0 keeps none.
    #[serde(default = "default_disk_reserve_bytes")]
    pub disk_reserve_bytes: u64,
}

/// One GiB: room for the WAL to grow between checkpoints and for a burst
/// of bodies, with time left to act before writes fail.
fn default_min_free_disk_bytes() -> u64 {
    1 << 30
}

fn default_storage_url() -> SecretString {
    "sqlite://hookinbox.db".into()
}
fn default_commit_timeout() -> Duration {
    Duration::from_secs(2)
}
// The store's own defaults, so a config without `[storage]` and a store
// opened by a library user behave the same.
fn default_busy_timeout() -> Duration {
    SqliteOptions::DEFAULT_BUSY_TIMEOUT
}
fn default_queue_capacity() -> usize {
    SqliteOptions::DEFAULT_QUEUE_CAPACITY
}
fn default_max_batch_events() -> usize {
    SqliteOptions::DEFAULT_MAX_BATCH_EVENTS
}
fn default_commit_interval() -> Duration {
    SqliteOptions::DEFAULT_COMMIT_INTERVAL
}
fn default_disk_reserve_bytes() -> u64 {
    SqliteOptions::DEFAULT_DISK_RESERVE_BYTES
}
fn default_pool_size() -> usize {
    PostgresOptions::DEFAULT_POOL_SIZE
}
fn default_connect_timeout() -> Duration {
    PostgresOptions::DEFAULT_CONNECT_TIMEOUT
}

impl Default for StorageFile {
    fn default() -> Self {
        StorageFile {
            url: default_storage_url(),
            password_env: None,
            password_file: None,
            schema: None,
            pool_size: default_pool_size(),
            connect_timeout: default_connect_timeout(),
            commit_timeout: default_commit_timeout(),
            busy_timeout: default_busy_timeout(),
            queue_capacity: default_queue_capacity(),
            max_batch_events: default_max_batch_events(),
            commit_interval: default_commit_interval(),
            min_free_disk_bytes: default_min_free_disk_bytes(),
            disk_reserve_bytes: default_disk_reserve_bytes(),
        }
    }
}

/// `[delivery]`: how workers lease and poll, for all targets.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryFile {
    /// How long a worker holds a leased delivery before another may take
    /// it; at least twice an HTTP or NATS target's `timeout` is used. Workers
    /// heartbeat at a third of it.
    #[serde(default = "default_lease", with = "humantime_serde")]
    pub lease: Duration,
    /// How often idle workers look for due deliveries when nothing wakes
    /// them (events accepted by another process, retries coming due).
    #[serde(default = "default_poll_interval", with = "humantime_serde")]
    pub poll_interval: Duration,
    /// How often expired leases are returned to PENDING.
    #[serde(default = "default_rescue_interval", with = "humantime_serde")]
    pub rescue_interval: Duration,
}

fn default_lease() -> Duration {
    Duration::from_secs(30)
}
fn default_poll_interval() -> Duration {
    Duration::from_millis(250)
}
fn default_rescue_interval() -> Duration {
    Duration::from_secs(5)
}

impl Default for DeliveryFile {
    fn default() -> Self {
        DeliveryFile {
            lease: default_lease(),
            poll_interval: default_poll_interval(),
            rescue_interval: default_rescue_interval(),
        }
    }
}
