//! PostgreSQL for black-box tests: the server at `HOOKINBOX_TEST_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/postgres`; `.ci/run` makes
//! sure it is up). Each test gets a schema of its own, dropped afterwards, so
//! tests run in parallel on one database. A missing server fails the test,
//! saying what to do: these tests never skip.

use std::time::Duration;

use hookinbox::tokio_postgres::{self, NoTls};

/// The server the tests use.
pub fn postgres_url() -> String {
    std::env::var("HOOKINBOX_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// One test's schema; dropped, with everything in it, on drop.
pub struct PgSchema {
    pub name: String,
}

impl PgSchema {
    pub fn new() -> PgSchema {
        // The random half of a v7 uuid (its first half is the time).
        let id = uuid::Uuid::now_v7().simple().to_string();
        let name = format!("hbx_{}", &id[16..]);
        PgSchema { name }
    }

    /// `config` storing in this schema.
    pub fn config(&self, config: hookinbox_testing::TestConfig) -> hookinbox_testing::TestConfig {
        config
            .storage_url(&postgres_url())
            .storage(&format!("schema = \"{}\"\npool_size = 4", self.name))
    }

    /// Runs `sql` in this schema (the tables hookinbox created there).
    pub async fn query(&self, sql: &str) -> Vec<tokio_postgres::Row> {
        let client = connect().await;
        client
            .batch_execute(&format!("SET search_path TO {}", self.name))
            .await
            .expect("set search_path");
        client.query(sql, &[]).await.expect("query")
    }

    /// Runs statements (`;`-separated, no results) with this schema first
    /// on the search path; it need not exist yet.
    pub async fn execute(&self, sql: &str) {
        let client = connect().await;
        client
            .batch_execute(&format!("SET search_path TO {}; {sql}", self.name))
            .await
            .expect("execute");
    }

    /// A single count.
    pub async fn count(&self, sql: &str) -> i64 {
        self.query(sql).await[0].get::<_, i64>(0)
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        let name = self.name.clone();
        // A runtime of its own: drop runs inside or outside a test's runtime.
        let dropped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(async move {
                    let client = connect().await;
                    client
                        .batch_execute(&format!(
                            // A test that failed may leave a transaction holding
                            // locks: give up on the drop rather than hang.
                            "SET lock_timeout = '5s'; DROP SCHEMA IF EXISTS {name} CASCADE"
                        ))
                        .await
                })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("could not drop test schema {}", self.name);
        }
    }
}

async fn connect() -> tokio_postgres::Client {
    let url = postgres_url();
    let connected = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_postgres::connect(&url, NoTls),
    )
    .await;
    match connected {
        Ok(Ok((client, connection))) => {
            tokio::spawn(connection);
            client
        }
        other => panic!(
            "PostgreSQL is needed at {url} (HOOKINBOX_TEST_POSTGRES_URL; .ci/services starts it): {:?}",
            other.map(|r| r.map(drop))
        ),
    }
}
