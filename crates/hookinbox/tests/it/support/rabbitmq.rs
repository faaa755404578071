//! RabbitMQ for the `rabbitmq` target's tests: the broker at
//! `HOOKINBOX_TEST_RABBITMQ_URL` (default `amqp://guest:guest@127.0.0.1:5672/%2f`,
//! started by `.ci/services`). Each test has an exchange and a queue of its
//! own, with unique names; the queue is exclusive to the test's connection
//! and the exchange auto-deleted with its last binding, so both go when
//! the test ends (pass or fail) and tests run in parallel. A broker that
//! cannot be reached fails the test — it never skips.

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use lapin::options::{
    BasicConsumeOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};

use super::LAB_SECRET;

/// The broker the tests use.
pub fn rabbitmq_url() -> String {
    std::env::var("HOOKINBOX_TEST_RABBITMQ_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
}

/// `host:port` of [`rabbitmq_url`], for a proxy in front of it.
pub fn rabbitmq_address() -> String {
    let url = rabbitmq_url();
    let after_scheme = url.split("://").nth(1).unwrap_or_default();
    let authority = after_scheme.split('/').next().unwrap_or_default();
    authority.rsplit('@').next().unwrap_or_default().to_owned()
}

/// [`rabbitmq_url`] pointed at `address` instead.
pub fn rabbitmq_url_via(address: &str) -> String {
    rabbitmq_url().replace(&rabbitmq_address(), address)
}

/// A config whose `lab` endpoint (ordered by `object_id` and
/// `object_version` in the body) delivers to one rabbitmq target `amqp`
/// publishing to `exchange` with `routing_key`; `target_extra` adds target
/// settings. Retries come quickly.
pub fn config_with_rabbitmq_target(
    db: &Path,
    url: &str,
    exchange: &str,
    routing_key: &str,
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
name = "amqp"
kind = "rabbitmq"
url = "{url}"
exchange = "{exchange}"
routing_key = "{routing_key}"
timeout = "2s"
retry_base = "20ms"
retry_cap = "200ms"
max_attempts = 1000
{target_extra}
"#,
        db = db.display()
    )
}

/// One message as the test's queue received it.
#[derive(Debug, Clone)]
pub struct Message {
    pub routing_key: String,
    pub properties: BasicProperties,
    pub body: Vec<u8>,
}

impl Message {
    pub fn header(&self, name: &str) -> String {
        match self
            .properties
            .headers()
            .as_ref()
            .and_then(|headers| headers.inner().get(name).cloned())
        {
            Some(AMQPValue::LongString(value)) => {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            }
            _ => String::new(),
        }
    }

    pub fn message_id(&self) -> String {
        self.properties
            .message_id()
            .as_ref()
            .map(|id| id.to_string())
            .unwrap_or_default()
    }
}

/// The test's exchange (a topic exchange) and queue.
pub struct TestBroker {
    pub exchange: String,
    pub queue: String,
    /// Every routing key the test uses starts with it.
    pub prefix: String,
    channel: Channel,
    _connection: Connection,
}

impl TestBroker {
    /// Connects and declares the exchange; fails the test at once, saying
    /// what to do, when the broker cannot be reached.
    pub async fn new() -> TestBroker {
        let url = rabbitmq_url();
        let connection = match tokio::time::timeout(
            Duration::from_secs(5),
            Connection::connect(&url, ConnectionProperties::default()),
        )
        .await
        {
            Ok(Ok(connection)) => connection,
            failed => panic!(
                "RabbitMQ is not reachable at {} ({failed:?}). The rabbitmq target's tests \
                 need it: start it (`.ci/services` does, as `.ci/run` runs it) or point \
                 HOOKINBOX_TEST_RABBITMQ_URL at a broker.",
                rabbitmq_address()
            ),
        };
        let channel = connection.create_channel().await.expect("a channel");
        let unique = uuid::Uuid::now_v7().simple().to_string();
        let broker = TestBroker {
            exchange: format!("hookinbox-test-{unique}"),
            queue: format!("hookinbox-test-{unique}"),
            prefix: format!("t{unique}"),
            channel,
            _connection: connection,
        };
        broker
            .channel
            .exchange_declare(
                broker.exchange.as_str().into(),
                ExchangeKind::Topic,
                ExchangeDeclareOptions {
                    auto_delete: true,
                    ..ExchangeDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("declare the test's exchange");
        broker
            .channel
            .queue_declare(
                broker.queue.as_str().into(),
                QueueDeclareOptions {
                    exclusive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("declare the test's queue");
        broker
    }

    /// Binds the queue to every routing key under the prefix.
    pub async fn bind(&self) {
        self.channel
            .queue_bind(
                self.queue.as_str().into(),
                self.exchange.as_str().into(),
                format!("{}.#", self.prefix).into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("bind the test's queue");
    }

    /// Messages in the queue, as the broker counts them.
    pub async fn ready(&self) -> u32 {
        self.channel
            .queue_declare(
                self.queue.as_str().into(),
                QueueDeclareOptions {
                    passive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("the test's queue")
            .message_count()
    }

    /// Takes every message from the queue, in queue order, once `ready()`
    /// reached `at_least` (or after 20 s, with what is there).
    pub async fn take_all(&self, at_least: u32) -> Vec<Message> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while self.ready().await < at_least && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let count = self.ready().await as usize;
        let mut consumer = self
            .channel
            .basic_consume(
                self.queue.as_str().into(),
                format!("take-{}", uuid::Uuid::now_v7().simple())
                    .as_str()
                    .into(),
                BasicConsumeOptions {
                    no_ack: true,
                    ..BasicConsumeOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("consume the test's queue");
        let mut received = Vec::with_capacity(count);
        while received.len() < count {
            let delivery = tokio::time::timeout_at(
                deadline.max(tokio::time::Instant::now() + Duration::from_secs(10)),
                consumer.next(),
            )
            .await
            .expect("the queue's messages arrive")
            .expect("the consumer is open")
            .expect("a delivery");
            received.push(Message {
                routing_key: delivery.routing_key.to_string(),
                properties: delivery.properties.clone(),
                body: delivery.data.clone(),
            });
        }
        received
    }
}
