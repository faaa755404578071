//! The `redis_stream` target: `XADD`s each event to a Redis stream and
//! counts it delivered once Redis answered with the entry's id.
//!
//! An entry has the fields `id` (the inbox id), `type` (the event type,
//! empty when the provider gives none), `headers` (a JSON object of the
//! `nats` target's headers and `Content-Type`, see `broker_headers`) and
//! `body` (the raw body, byte for byte). With `maxlen`, every `XADD` trims
//! the stream to about that many entries (`MAXLEN ~`, which Redis does
//! cheaply, a whole node at a time).
//!
//! Delivery is at-least-once: a worker that crashes between the `XADD` and
//! the DELIVERED record adds the event again, under a new entry id but the
//! same `id` field, which is the consumer's dedup key (docs/delivery.md says
//! how to consume).
//!
//! One multiplexed connection per target (`redis::aio::ConnectionManager`),
//! made at the first attempt and shared by the target's attempts in
//! flight. It reconnects by itself, with an exponential backoff, when the
//! server or the network goes away; an attempt meanwhile fails as
//! `redis: …` and is retried by the target's policy.
//!
//! Errors are written for `last_error`: the stream and what went wrong,
//! never the server's URL or a password.

use std::num::NonZeroU64;
use std::time::Duration;

use async_trait::async_trait;
use hookinbox_store::{LeasedDelivery, StoredEvent};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{ConnectionInfo, IntoConnectionInfo};
use secrecy::ExposeSecret;
use tokio::sync::OnceCell;
use tokio::time::Instant;

use super::broker_headers::{broker_headers, content_type};
use super::destination::{AttemptResult, Destination};
use super::retry_policy::AttemptOutcome;
use crate::config::{ConfigError, NameTemplate, RedisStreamDestination, TemplateValues};

/// Longest server text kept in `last_error`.
const MAX_ERROR_CHARS: usize = 200;

/// The reconnect backoff of the connection manager: from this, doubling
/// (with jitter) up to [`RECONNECT_CAP`].
const RECONNECT_FIRST: Duration = Duration::from_millis(100);
const RECONNECT_CAP: Duration = Duration::from_secs(5);

pub struct RedisStreamTarget {
    /// With the password in it: never printed.
    server: ConnectionInfo,
    stream: NameTemplate,
    maxlen: Option<NonZeroU64>,
    timeout: Duration,
    connection: OnceCell<ConnectionManager>,
}

impl std::fmt::Debug for RedisStreamTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStreamTarget")
            .field("stream", &self.stream)
            .field("maxlen", &self.maxlen)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisStreamTarget {
    /// Reads the password; connects nothing yet. `field` names the target
    /// in errors (`endpoint[0].target[1]`).
    pub fn new(
        destination: &RedisStreamDestination,
        field: &str,
    ) -> Result<RedisStreamTarget, ConfigError> {
        let url = format!("redis://{}/{}", destination.address, destination.db);
        let server = url.as_str().into_connection_info().map_err(|_| {
            ConfigError::invalid(format!("{field}.url"), "is not a redis://host:port/db URL")
        })?;
        let mut settings = server.redis_settings().clone();
        if let Some(user) = &destination.username {
            settings = settings.set_username(user);
        }
        if let Some(source) = &destination.password {
            let password = source.read(&format!("{field}.password"))?;
            settings = settings.set_password(password.expose_secret());
        }
        Ok(RedisStreamTarget {
            server: server.set_redis_settings(settings),
            stream: destination.stream.clone(),
            maxlen: destination.maxlen,
            timeout: destination.timeout,
            connection: OnceCell::new(),
        })
    }

    /// One attempt: the `XADD` and its reply within `timeout`.
    pub async fn send(&self, event: &StoredEvent) -> AttemptOutcome {
        let deadline = Instant::now() + self.timeout;
        let mut connection = match self.connection.get_or_try_init(|| self.connect()).await {
            Ok(connection) => connection.clone(),
            Err(error) => return transient(error),
        };
        let stream = self.stream.render(TemplateValues {
            provider: &event.provider,
            endpoint: &event.endpoint_id,
            event_type: event.event_type.as_deref(),
        });
        let command = xadd(&stream, self.maxlen, event);
        let add = command.query_async::<String>(&mut connection);
        match tokio::time::timeout_at(deadline, add).await {
            Ok(Ok(_entry_id)) => AttemptOutcome::Delivered,
            Ok(Err(error)) => transient(format!(
                "redis: XADD to {stream} failed: {}",
                clip(&error.to_string())
            )),
            Err(_) => transient(format!(
                "redis: no XADD reply within {} ms for {stream}",
                self.timeout.as_millis()
            )),
        }
    }

    /// Makes the connection manager; it connects at the first command and
    /// reconnects by itself.
    async fn connect(&self) -> Result<ConnectionManager, String> {
        let client = redis::Client::open(self.server.clone())
            .map_err(|error| format!("redis: cannot make the client: {:?}", error.kind()))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
            .set_min_delay(RECONNECT_FIRST)
            .set_max_delay(RECONNECT_CAP);
        ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|error| format!("redis: cannot make the client: {:?}", error.kind()))
    }
}

#[async_trait]
impl Destination for RedisStreamTarget {
    async fn attempt(&self, _lease: &LeasedDelivery, event: StoredEvent) -> AttemptResult {
        self.send(&event).await.into()
    }
}

/// `XADD stream [MAXLEN ~ n] * id … type … headers … body …`.
fn xadd(stream: &str, maxlen: Option<NonZeroU64>, event: &StoredEvent) -> redis::Cmd {
    let mut command = redis::cmd("XADD");
    command.arg(stream);
    if let Some(maxlen) = maxlen {
        command.arg("MAXLEN").arg("~").arg(maxlen.get());
    }
    command
        .arg("*")
        .arg("id")
        .arg(&event.id)
        .arg("type")
        .arg(event.event_type.as_deref().unwrap_or_default())
        .arg("headers")
        .arg(headers_json(event))
        .arg("body")
        .arg(event.payload.as_deref().unwrap_or_default());
    command
}

/// The entry's `headers` field: a JSON object of names to values.
fn headers_json(event: &StoredEvent) -> String {
    let mut headers = serde_json::Map::new();
    headers.insert("Content-Type".into(), content_type(event).into());
    for (name, value) in broker_headers(event) {
        headers.insert(name.into(), value.into());
    }
    serde_json::Value::Object(headers).to_string()
}

fn clip(text: &str) -> String {
    text.chars().take(MAX_ERROR_CHARS).collect()
}

fn transient(error: String) -> AttemptOutcome {
    AttemptOutcome::Transient {
        error,
        retry_after_ms: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookinbox_store::UnsignedMetadata;

    fn event() -> StoredEvent {
        StoredEvent {
            id: "0190-inbox-id".into(),
            endpoint_id: "gh".into(),
            provider: "github".into(),
            provider_event_id: "delivery-1".into(),
            event_type: Some("push".into()),
            object_id: None,
            object_version: None,
            received_at_ms: 0,
            content_type: Some("application/json".into()),
            payload: Some(bytes::Bytes::from_static(b"{\"a\": 1}")),
            unsigned_metadata: UnsignedMetadata {
                event_id: true,
                event_type: false,
            },
            trace_parent: None,
        }
    }

    fn args(command: &redis::Cmd) -> Vec<String> {
        command
            .args_iter()
            .map(|arg| match arg {
                redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                _ => "<not a simple argument>".to_owned(),
            })
            .collect()
    }

    #[test]
    fn an_entry_has_the_id_the_type_the_headers_and_the_raw_body() {
        let command = xadd("webhooks:gh", NonZeroU64::new(1000), &event());
        let args = args(&command);
        assert_eq!(
            args[..11],
            [
                "XADD",
                "webhooks:gh",
                "MAXLEN",
                "~",
                "1000",
                "*",
                "id",
                "0190-inbox-id",
                "type",
                "push",
                "headers"
            ]
        );
        let headers: serde_json::Value = serde_json::from_str(&args[11]).unwrap();
        assert_eq!(headers["Idempotency-Key"], "0190-inbox-id");
        assert_eq!(headers["Content-Type"], "application/json");
        assert_eq!(headers["X-Hookinbox-Event-Id"], "delivery-1");
        assert_eq!(headers["X-Hookinbox-Unsigned"], "event-id");
        assert_eq!(args[12..], ["body", "{\"a\": 1}"]);

        let untrimmed = args_of_untrimmed();
        assert_eq!(untrimmed[..3], ["XADD", "s", "*"]);
    }

    fn args_of_untrimmed() -> Vec<String> {
        args(&xadd("s", None, &event()))
    }
}
