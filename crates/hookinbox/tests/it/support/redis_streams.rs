//! Redis for the `redis_stream` target's tests: the server at
//! `HOOKINBOX_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`, started
//! by `.ci/services`). Each test has stream keys of its own (a unique
//! prefix), deleted when the test ends (pass or fail), so tests run in
//! parallel. A server that cannot be reached fails the test — it never
//! skips.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use redis::aio::MultiplexedConnection;

use super::LAB_SECRET;

/// The server the tests use.
pub fn redis_url() -> String {
    std::env::var("HOOKINBOX_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// `host:port` of [`redis_url`], for a proxy in front of it.
pub fn redis_address() -> String {
    let url = redis_url();
    let after_scheme = url.split("://").nth(1).unwrap_or_default();
    let authority = after_scheme.split('/').next().unwrap_or_default();
    authority.rsplit('@').next().unwrap_or_default().to_owned()
}

/// [`redis_url`] pointed at `address` instead.
pub fn redis_url_via(address: &str) -> String {
    redis_url().replace(&redis_address(), address)
}

/// A config whose `lab` endpoint (ordered by `object_id` and
/// `object_version` in the body) delivers to one redis_stream target
/// `stream` adding to `stream`; `target_extra` adds target settings.
/// Retries come quickly.
pub fn config_with_redis_stream_target(
    db: &Path,
    url: &str,
    stream: &str,
    target_extra: &str,
) -> String {
    format!(
        r#"
[storage]
url = "sqlite://{db}"

[encryption]
allow_plaintext = true

[delivery]
poll_interval = "50ms"
lease = "1s"
rescue_interval = "200ms"

[[endpoint]]
id = "lab"
provider = "lab"
object_id = "/object_id"
object_version = "/object_version"

[[endpoint.secret]]
version = "v1"
value = "{LAB_SECRET}"

[[endpoint.target]]
name = "stream"
kind = "redis_stream"
url = "{url}"
stream = "{stream}"
timeout = "2s"
retry_base = "20ms"
retry_cap = "200ms"
max_attempts = 1000
{target_extra}
"#,
        db = db.display()
    )
}

/// An entry as `XRANGE` answers it: the entry id and the field/value pairs.
type RawEntry = (String, Vec<(String, Vec<u8>)>);

/// One stream entry: its id and fields.
#[derive(Debug, Clone)]
pub struct Entry {
    pub entry_id: String,
    pub fields: HashMap<String, Vec<u8>>,
}

impl Entry {
    pub fn field(&self, name: &str) -> String {
        self.fields
            .get(name)
            .map(|value| String::from_utf8_lossy(value).into_owned())
            .unwrap_or_default()
    }

    pub fn headers(&self) -> serde_json::Value {
        serde_json::from_str(&self.field("headers")).unwrap_or_default()
    }
}

/// The test's key prefix and a connection to read with.
pub struct TestRedis {
    /// Every stream key of the test starts with it.
    pub prefix: String,
    connection: MultiplexedConnection,
}

impl TestRedis {
    /// Connects; fails the test at once, saying what to do, when the
    /// server cannot be reached.
    pub async fn new() -> TestRedis {
        let url = redis_url();
        let connect = async {
            let client = redis::Client::open(url.as_str())?;
            // A busy machine may take longer than the client's 500 ms default
            // to answer an XRANGE of a few thousand entries.
            let config = redis::AsyncConnectionConfig::new()
                .set_response_timeout(Some(Duration::from_secs(20)))
                .set_connection_timeout(Some(Duration::from_secs(5)));
            client
                .get_multiplexed_async_connection_with_config(&config)
                .await
        };
        let connection = match tokio::time::timeout(Duration::from_secs(5), connect).await {
            Ok(Ok(connection)) => connection,
            failed => panic!(
                "Redis is not reachable at {} ({failed:?}). The redis_stream target's tests \
                 need it: start it (`.ci/services` does, as `.ci/run` runs it) or point \
                 HOOKINBOX_TEST_REDIS_URL at a server.",
                redis_address()
            ),
        };
        TestRedis {
            prefix: format!("hookinbox-test:{}", uuid::Uuid::now_v7().simple()),
            connection,
        }
    }

    /// Entries in `stream`, as the server counts them.
    pub async fn len(&self, stream: &str) -> usize {
        redis::cmd("XLEN")
            .arg(stream)
            .query_async(&mut self.connection.clone())
            .await
            .expect("XLEN")
    }

    /// Every entry of `stream`, oldest first.
    pub async fn entries(&self, stream: &str) -> Vec<Entry> {
        let raw: Vec<RawEntry> = redis::cmd("XRANGE")
            .arg(stream)
            .arg("-")
            .arg("+")
            .query_async(&mut self.connection.clone())
            .await
            .expect("XRANGE");
        raw.into_iter()
            .map(|(entry_id, fields)| Entry {
                entry_id,
                fields: fields.into_iter().collect(),
            })
            .collect()
    }
}

impl Drop for TestRedis {
    /// Deletes the test's keys from a thread of its own: the test's
    /// runtime may be the one that is panicking.
    fn drop(&mut self) {
        let pattern = format!("{}*", self.prefix);
        let _ = std::thread::spawn(move || {
            let Ok(client) = redis::Client::open(redis_url().as_str()) else {
                return;
            };
            let Ok(mut connection) = client.get_connection() else {
                return;
            };
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(&pattern)
                .query(&mut connection)
                .unwrap_or_default();
            if !keys.is_empty() {
                let _: redis::RedisResult<()> = redis::cmd("DEL").arg(keys).query(&mut connection);
            }
        })
        .join();
    }
}
