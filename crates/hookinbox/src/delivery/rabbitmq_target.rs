//! The `rabbitmq` target: publishes the raw body to an exchange over AMQP
//! 0-9-1 and counts the event delivered only once the broker confirmed it
//! (publisher confirms) and did not return it.
//!
//! Every message is persistent (`delivery_mode` 2), its `message_id` is the
//! inbox id, its `content_type` the one received, its `type` the event
//! type, and its headers are those of a `nats` target (`broker_headers`).
//! It is published *mandatory*: a message no queue is bound for comes back
//! as `basic.return` before its confirm, and the attempt fails
//! (`rabbitmq: unroutable …`) instead of the broker dropping it silently;
//! it is retried by the target's policy, so binding a queue later
//! delivers it.
//!
//! Delivery is at-least-once: a worker that crashes between the confirm
//! and the DELIVERED record publishes again under the same `message_id`,
//! which is the consumer's dedup key (RabbitMQ does not deduplicate).
//!
//! One connection and one confirm-mode channel per target, shared by all
//! the target's attempts in flight and opened at the first attempt. When
//! the broker or the network goes away, the next attempt reconnects; after
//! a failed connect, attempts fail at once (`rabbitmq: not connected …`)
//! until a backoff (`RECONNECT_FIRST`, doubling up to `RECONNECT_CAP`) has
//! passed, so a broker that is down is not hammered by every delivery. A
//! channel the broker closed (a publish to an exchange that does not
//! exist) is reopened on the same connection.
//!
//! Errors are written for `last_error`: the exchange, the routing key and
//! what went wrong, never a credential or the broker's URL.

use std::time::Duration;

use async_trait::async_trait;
use hookinbox_store::{LeasedDelivery, StoredEvent};
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::tcp::OwnedTLSConfig;
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::uri::AMQPUri;
use lapin::{BasicProperties, Channel, Confirmation, Connection, ConnectionProperties};
use secrecy::ExposeSecret;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::broker_headers::{broker_headers, content_type};
use super::destination::{AttemptResult, Destination};
use super::retry_policy::AttemptOutcome;
use crate::config::{ConfigError, NameTemplate, RabbitmqDestination, TemplateValues};

/// Longest broker text kept in `last_error`.
const MAX_ERROR_CHARS: usize = 200;

/// The wait after the first failed connect; it doubles with each further
/// failure up to [`RECONNECT_CAP`].
const RECONNECT_FIRST: Duration = Duration::from_millis(100);
const RECONNECT_CAP: Duration = Duration::from_secs(5);

/// AMQP's `delivery_mode` of a message the broker writes to disk (in a
/// durable queue).
const PERSISTENT: u8 = 2;

/// Longest routing key AMQP carries (a short string).
const MAX_ROUTING_KEY_BYTES: usize = 255;

pub struct RabbitmqTarget {
    /// With the password in it: never printed.
    uri: AMQPUri,
    tls: OwnedTLSConfig,
    exchange: ShortString,
    routing_key: NameTemplate,
    timeout: Duration,
    link: Mutex<Link>,
}

impl std::fmt::Debug for RabbitmqTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RabbitmqTarget")
            .field("exchange", &self.exchange)
            .field("routing_key", &self.routing_key)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The target's connection, as attempts find it.
#[derive(Default)]
struct Link {
    open: Option<Open>,
    /// Connects that failed in a row.
    failures: u32,
    /// No connect before this, after a failure.
    retry_at: Option<Instant>,
    /// Why the last connect failed.
    problem: Option<String>,
}

struct Open {
    connection: Connection,
    channel: Channel,
}

impl RabbitmqTarget {
    /// Reads the password and the CA file; connects nothing yet. `field`
    /// names the target in errors (`endpoint[0].target[1]`).
    pub fn new(
        destination: &RabbitmqDestination,
        field: &str,
    ) -> Result<RabbitmqTarget, ConfigError> {
        let mut uri = destination.url.clone();
        if let Some(source) = &destination.password {
            let password = source.read(&format!("{field}.password"))?;
            uri.authority.userinfo.password = password.expose_secret().to_owned();
        }
        let mut tls = OwnedTLSConfig::default();
        if let Some(path) = &destination.ca_file {
            let pem = std::fs::read_to_string(path).map_err(|error| {
                ConfigError::invalid(
                    format!("{field}.ca_file"),
                    format!("cannot read {}: {error}", path.display()),
                )
            })?;
            if !pem.contains("-----BEGIN CERTIFICATE-----") {
                return Err(ConfigError::invalid(
                    format!("{field}.ca_file"),
                    format!("{} holds no PEM certificate", path.display()),
                ));
            }
            tls.cert_chain = Some(pem);
        }
        // Checked at start-up by the config already.
        let exchange = ShortString::try_new(destination.exchange.as_str()).map_err(|_| {
            ConfigError::invalid(format!("{field}.exchange"), "is longer than 255 bytes")
        })?;
        Ok(RabbitmqTarget {
            uri,
            tls,
            exchange,
            routing_key: destination.routing_key.clone(),
            timeout: destination.timeout,
            link: Mutex::new(Link::default()),
        })
    }

    /// One attempt: connection, publish and confirm within `timeout`.
    pub async fn send(&self, event: &StoredEvent) -> AttemptOutcome {
        let deadline = Instant::now() + self.timeout;
        let channel = match tokio::time::timeout_at(deadline, self.channel()).await {
            Ok(Ok(channel)) => channel,
            Ok(Err(problem)) => return transient(problem),
            Err(_) => return transient("rabbitmq: not connected (connect timed out)".to_owned()),
        };
        let routing_key = routing_key(&self.routing_key, event);
        let Ok(routing_key) = ShortString::try_new(routing_key) else {
            // `routing_key` cuts it to what AMQP carries; kept as a guard.
            return AttemptOutcome::Permanent {
                error: "rabbitmq: the routing key is longer than 255 bytes".to_owned(),
            };
        };
        let body = event.payload.clone().unwrap_or_default();
        let publish = async {
            channel
                .basic_publish(
                    self.exchange.clone(),
                    routing_key.clone(),
                    BasicPublishOptions {
                        mandatory: true,
                        immediate: false,
                    },
                    &body,
                    properties(event),
                )
                .await?
                .await
        };
        let where_to = format!(
            "exchange {:?} routing key {:?}",
            self.exchange.as_str(),
            routing_key.as_str()
        );
        match tokio::time::timeout_at(deadline, publish).await {
            Ok(Ok(Confirmation::Ack(None))) => AttemptOutcome::Delivered,
            Ok(Ok(Confirmation::Ack(Some(returned)) | Confirmation::Nack(Some(returned)))) => {
                transient(format!(
                    "rabbitmq: unroutable: {where_to} ({} {})",
                    returned.reply_code,
                    clip(returned.reply_text.as_str())
                ))
            }
            Ok(Ok(Confirmation::Nack(None))) => transient(format!(
                "rabbitmq: the broker refused the message (nack) for {where_to}"
            )),
            Ok(Ok(Confirmation::NotRequested)) => {
                // Confirms are selected on every channel we open; a channel
                // without them cannot prove a delivery.
                self.forget(&channel).await;
                transient("rabbitmq: the channel is not in confirm mode".to_owned())
            }
            Ok(Err(error)) => transient(format!(
                "rabbitmq: publish to {where_to} failed: {}",
                clip(&error.to_string())
            )),
            Err(_) => {
                // A confirm that never comes: start over on a new connection.
                self.forget(&channel).await;
                transient(format!(
                    "rabbitmq: no confirm within {} ms for {where_to}",
                    self.timeout.as_millis()
                ))
            }
        }
    }

    /// The open channel, opening it (and the connection) when needed.
    async fn channel(&self) -> Result<Channel, String> {
        let mut link = self.link.lock().await;
        if let Some(open) = &link.open {
            if open.channel.status().connected() {
                return Ok(open.channel.clone());
            }
            if open.connection.status().connected() {
                // The broker closed the channel (e.g. a publish to a missing
                // exchange): a new one on the same connection.
                match confirm_channel(&open.connection).await {
                    Ok(channel) => {
                        if let Some(open) = link.open.as_mut() {
                            open.channel = channel.clone();
                        }
                        return Ok(channel);
                    }
                    Err(error) => {
                        link.problem = Some(clip(&error.to_string()));
                    }
                }
            }
            link.open = None;
        }
        if let Some(retry_at) = link.retry_at {
            if Instant::now() < retry_at {
                return Err(not_connected(link.problem.as_deref()));
            }
        }
        match self.connect().await {
            Ok(open) => {
                let channel = open.channel.clone();
                *link = Link {
                    open: Some(open),
                    ..Link::default()
                };
                Ok(channel)
            }
            Err(error) => {
                link.failures = link.failures.saturating_add(1);
                let doublings = link.failures.saturating_sub(1).min(16);
                let wait = (RECONNECT_FIRST * 2u32.pow(doublings)).min(RECONNECT_CAP);
                link.retry_at = Some(Instant::now() + wait);
                link.problem = Some(clip(&error.to_string()));
                Err(not_connected(link.problem.as_deref()))
            }
        }
    }

    async fn connect(&self) -> lapin::Result<Open> {
        let properties =
            ConnectionProperties::default().with_connection_name(LongString::from("hookinbox"));
        let connection = lapin::DefaultConnectionBuilder::new()?
            .with_uri(self.uri.clone())
            .with_properties(properties)
            .with_tls_config(self.tls.clone())
            .connect()
            .await?;
        let channel = confirm_channel(&connection).await?;
        Ok(Open {
            connection,
            channel,
        })
    }

    /// Drops the connection `channel` belongs to, if it is still the
    /// current one: the next attempt connects again.
    async fn forget(&self, channel: &Channel) {
        let mut link = self.link.lock().await;
        if link
            .open
            .as_ref()
            .is_some_and(|open| open.channel.id() == channel.id())
        {
            link.open = None;
        }
    }
}

#[async_trait]
impl Destination for RabbitmqTarget {
    async fn attempt(&self, _lease: &LeasedDelivery, event: StoredEvent) -> AttemptResult {
        self.send(&event).await.into()
    }
}

async fn confirm_channel(connection: &Connection) -> lapin::Result<Channel> {
    let channel = connection.create_channel().await?;
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await?;
    Ok(channel)
}

/// The routing key of `event`, cut to what AMQP carries (at a character
/// boundary: a literal in the template may be non-ASCII).
fn routing_key(template: &NameTemplate, event: &StoredEvent) -> String {
    let mut key = template.render(TemplateValues {
        provider: &event.provider,
        endpoint: &event.endpoint_id,
        event_type: event.event_type.as_deref(),
    });
    if key.len() > MAX_ROUTING_KEY_BYTES {
        let mut end = MAX_ROUTING_KEY_BYTES;
        while !key.is_char_boundary(end) {
            end -= 1;
        }
        key.truncate(end);
    }
    key
}

/// The message's properties (see the module's documentation). A value
/// longer than an AMQP short string (255 bytes) is left out of the
/// properties; it is in the headers, which take any length.
fn properties(event: &StoredEvent) -> BasicProperties {
    let mut headers = FieldTable::default();
    for (name, value) in broker_headers(event) {
        headers.insert(
            ShortString::from(name),
            AMQPValue::LongString(LongString::from(value)),
        );
    }
    let mut properties = BasicProperties::default()
        .with_delivery_mode(PERSISTENT)
        .with_app_id(ShortString::from("hookinbox"))
        .with_headers(headers);
    if let Ok(id) = ShortString::try_new(event.id.as_str()) {
        properties = properties.with_message_id(id);
    }
    if let Ok(content_type) = ShortString::try_new(content_type(event)) {
        properties = properties.with_content_type(content_type);
    }
    if let Some(Ok(kind)) = event.event_type.as_deref().map(ShortString::try_new) {
        properties = properties.with_type(kind);
    }
    if let Ok(seconds) = u64::try_from(event.received_at_ms / 1000) {
        properties = properties.with_timestamp(seconds);
    }
    properties
}

fn not_connected(problem: Option<&str>) -> String {
    match problem {
        Some(problem) => format!("rabbitmq: not connected ({problem})"),
        None => "rabbitmq: not connected".to_owned(),
    }
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
            received_at_ms: 1_700_000_000_123,
            content_type: Some("application/json".into()),
            payload: Some(bytes::Bytes::from_static(b"{}")),
            unsigned_metadata: UnsignedMetadata {
                event_id: true,
                event_type: true,
            },
            trace_parent: None,
        }
    }

    fn header(properties: &BasicProperties, name: &str) -> Option<String> {
        match properties.headers().as_ref()?.inner().get(name)? {
            AMQPValue::LongString(value) => Some(String::from_utf8_lossy(value.as_bytes()).into()),
            _ => None,
        }
    }

    #[test]
    fn a_message_is_persistent_and_carries_the_inbox_id_and_the_metadata() {
        let properties = properties(&event());
        assert_eq!(*properties.delivery_mode(), Some(PERSISTENT));
        assert_eq!(
            properties.message_id().as_ref().map(ShortString::as_str),
            Some("0190-inbox-id")
        );
        assert_eq!(
            properties.content_type().as_ref().map(ShortString::as_str),
            Some("application/json")
        );
        assert_eq!(
            properties.kind().as_ref().map(ShortString::as_str),
            Some("push")
        );
        assert_eq!(*properties.timestamp(), Some(1_700_000_000));
        assert_eq!(
            header(&properties, "Idempotency-Key").as_deref(),
            Some("0190-inbox-id")
        );
        assert_eq!(
            header(&properties, "X-Hookinbox-Provider").as_deref(),
            Some("github")
        );
        assert_eq!(
            header(&properties, "X-Hookinbox-Endpoint").as_deref(),
            Some("gh")
        );
        assert_eq!(
            header(&properties, "X-Hookinbox-Event-Id").as_deref(),
            Some("delivery-1")
        );
        assert_eq!(
            header(&properties, "X-Hookinbox-Event-Type").as_deref(),
            Some("push")
        );
        assert_eq!(
            header(&properties, "X-Hookinbox-Unsigned").as_deref(),
            Some("event-id, event-type")
        );
    }

    #[test]
    fn a_long_event_type_stays_in_the_headers_and_the_key_is_cut() {
        let mut long = event();
        long.event_type = Some("é".repeat(200));
        let properties = properties(&long);
        assert_eq!(*properties.kind(), None);
        assert_eq!(
            header(&properties, "X-Hookinbox-Event-Type"),
            long.event_type
        );
        let template = NameTemplate::parse("{event_type}.ü.{event_type}.{event_type}").unwrap();
        let key = routing_key(&template, &long);
        assert!(key.len() <= MAX_ROUTING_KEY_BYTES, "{}", key.len());
        assert!(key.starts_with("____"));
    }
}
