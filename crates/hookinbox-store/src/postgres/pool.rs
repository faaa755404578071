//! Connecting to PostgreSQL: the options, the connection settings every
//! hookinbox session uses, and the pool.
//!
//! Why deadpool-postgres (over bb8): it checks at checkout that a pooled
//! connection is still open (`RecyclingMethod::Fast`, no round trip) and
//! replaces a dead one, so after the database comes back the next call
//! simply gets a new connection — the store recovers without a restart.
//! It also caches prepared statements per connection, and has bounded
//! waits for a free connection and for creating one, so a lost database
//! turns into a prompt error (503) instead of a hang.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use secrecy::{ExposeSecret, SecretString};

use super::tls;
use super::url::PostgresUrl;
use crate::{EncryptionKeys, StoreError};

/// How to reach the database, and the tuning of the PostgreSQL store.
#[derive(Clone)]
pub struct PostgresOptions {
    pub url: PostgresUrl,
    /// The password, when it does not come with the URL (the service reads
    /// `password_env` / `password_file` into it). Overrides the URL's.
    pub password: Option<SecretString>,
    /// The schema holding hookinbox's tables, created by the migration;
    /// `None`: the server's default (`public`). Lowercase letters, digits
    /// and `_`, at most 40 characters (it is part of the NOTIFY channel's
    /// name, which PostgreSQL caps at 63).
    pub schema: Option<String>,
    /// Most connections this process opens for reads, delivery and the
    /// rest; ingress has `accept_concurrency` connections of its own, and
    /// the LISTEN connection is one more. Size their sum against the
    /// server's `max_connections` divided by the number of processes.
    pub pool_size: usize,
    /// Longest wait to connect, or for a free pooled connection, before a
    /// call fails as unavailable.
    pub connect_timeout: Duration,
    /// Accepts that may wait for the batcher; beyond it requests get 503.
    pub queue_capacity: usize,
    /// Most events in one ingress transaction.
    pub max_batch_events: usize,
    /// Most payload bytes in one ingress transaction (a batch always takes
    /// at least one event).
    pub max_batch_bytes: usize,
    /// Ingress batches in flight at once, each on a connection of the
    /// ingress pool: while they commit, new requests gather into the next
    /// batch (see `accept_batcher.rs`).
    pub accept_concurrency: usize,
    /// Shown in `pg_stat_activity`.
    pub application_name: String,
    /// Seal raw bodies and audit headers at rest under the active key, and
    /// open sealed ones with the key their row names (the store and a
    /// reader made from these options). `None`: new records are stored
    /// plain, as before encryption existed.
    pub keys: Option<Arc<EncryptionKeys>>,
}

impl PostgresOptions {
    /// Connections per process unless configured.
    pub const DEFAULT_POOL_SIZE: usize = 16;
    /// Longest wait to connect unless configured (or set in the URL).
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

    pub fn new(url: PostgresUrl) -> PostgresOptions {
        PostgresOptions {
            url,
            password: None,
            schema: None,
            pool_size: PostgresOptions::DEFAULT_POOL_SIZE,
            connect_timeout: PostgresOptions::DEFAULT_CONNECT_TIMEOUT,
            queue_capacity: 4096,
            max_batch_events: 512,
            max_batch_bytes: 16 << 20,
            accept_concurrency: 2,
            application_name: "hookinbox".to_owned(),
            keys: None,
        }
    }

    /// The schema name, checked: it is spliced into SQL and a channel name.
    pub(crate) fn checked_schema(&self) -> Result<Option<&str>, StoreError> {
        let Some(schema) = self.schema.as_deref() else {
            return Ok(None);
        };
        let valid = (1..=40).contains(&schema.len())
            && schema
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && !schema.as_bytes()[0].is_ascii_digit()
            && !schema.starts_with("pg_");
        if valid {
            Ok(Some(schema))
        } else {
            Err(StoreError::open(format!(
                "schema `{schema}`: use 1 to 40 lowercase letters, digits and _, not starting with a digit or pg_"
            )))
        }
    }

    /// The driver configuration every connection uses: the URL's, with
    /// the password given separately, the schema on the search path, and
    /// `synchronous_commit = on` whatever the server's default — an ack
    /// must never precede the WAL flush of its commit.
    pub(crate) fn driver_config(&self) -> Result<tokio_postgres::Config, StoreError> {
        let mut config = self.url.driver_config();
        if let Some(password) = &self.password {
            config.password(password.expose_secret().as_bytes());
        }
        let mut options = config.get_options().unwrap_or_default().to_owned();
        if let Some(schema) = self.checked_schema()? {
            options.push_str(&format!(" -c search_path={schema}"));
        }
        options.push_str(" -c synchronous_commit=on");
        config.options(options.trim_start());
        config.application_name(&self.application_name);
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(self.connect_timeout);
        }
        // A peer that vanished without a FIN (a cut network) is noticed
        // within seconds, not after the kernel's two hours.
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(10));
        config.keepalives_interval(Duration::from_secs(2));
        config.keepalives_retries(3);
        config.tcp_user_timeout(Duration::from_secs(15));
        Ok(config)
    }

    /// The connection pool. Connections are made on demand, so this does
    /// not touch the network.
    pub(crate) fn pool(&self) -> Result<Pool, StoreError> {
        self.pool_of(self.driver_config()?, self.pool_size)
    }

    /// The ingress batcher's own pool, `accept_concurrency` connections
    /// that run only the accept statements.
    pub(crate) fn ingress_pool(&self) -> Result<Pool, StoreError> {
        self.pool_of(self.ingress_driver_config()?, self.accept_concurrency)
    }

    /// The ingress connections' settings: [`Self::driver_config`]'s, and
    /// generic plans (`plan_cache_mode = force_generic_plan`). The batch
    /// INSERT has two dozen array parameters; PostgreSQL plans it anew for
    /// each small batch's values (a custom plan: it costs less on paper),
    /// and that planning, which copies the arrays, bodies included, costs
    /// more server CPU than it saves — the plan is the same (unnest the
    /// arrays, probe the unique index). The rest of the store keeps the
    /// server's default on its own pool.
    pub(crate) fn ingress_driver_config(&self) -> Result<tokio_postgres::Config, StoreError> {
        let mut config = self.driver_config()?;
        let options = config.get_options().unwrap_or_default().to_owned();
        config.options(format!("{options} -c plan_cache_mode=force_generic_plan"));
        Ok(config)
    }

    fn pool_of(&self, config: tokio_postgres::Config, size: usize) -> Result<Pool, StoreError> {
        let tls = tls::connector(&self.url).map_err(StoreError::open)?;
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        Pool::builder(manager)
            .max_size(size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(self.connect_timeout))
            .create_timeout(Some(self.connect_timeout))
            .recycle_timeout(Some(self.connect_timeout))
            .build()
            .map_err(StoreError::open)
    }
}

impl fmt::Debug for PostgresOptions {
    /// The URL masked, the password left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("url", &self.url)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("schema", &self.schema)
            .field("pool_size", &self.pool_size)
            .field("connect_timeout", &self.connect_timeout)
            .field("queue_capacity", &self.queue_capacity)
            .field("max_batch_events", &self.max_batch_events)
            .field("max_batch_bytes", &self.max_batch_bytes)
            .field("accept_concurrency", &self.accept_concurrency)
            .field("application_name", &self.application_name)
            .field("keys", &self.keys)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(schema: Option<&str>) -> PostgresOptions {
        let mut options =
            PostgresOptions::new(PostgresUrl::parse("postgres://app:pw@db/inbox").unwrap());
        options.schema = schema.map(str::to_owned);
        options
    }

    #[test]
    fn schema_names_that_could_break_sql_are_refused() {
        assert!(options(Some("hookinbox_1")).checked_schema().is_ok());
        for bad in [
            "",
            "Inbox",
            "a-b",
            "a;drop",
            "1abc",
            "pg_x",
            &"x".repeat(41),
        ] {
            assert!(options(Some(bad)).checked_schema().is_err(), "{bad}");
        }
    }

    #[test]
    fn every_session_commits_synchronously_in_its_schema() {
        let mut options = options(Some("tenant_a"));
        options.password = Some("from-file".into());
        let config = options.driver_config().unwrap();
        assert_eq!(
            config.get_options(),
            Some("-c search_path=tenant_a -c synchronous_commit=on")
        );
        assert_eq!(config.get_password(), Some(&b"from-file"[..]));
        assert_eq!(
            options.ingress_driver_config().unwrap().get_options(),
            Some("-c search_path=tenant_a -c synchronous_commit=on -c plan_cache_mode=force_generic_plan")
        );
        let debug = format!("{options:?}");
        assert!(
            !debug.contains("from-file") && !debug.contains(":pw@"),
            "{debug}"
        );
    }
}
