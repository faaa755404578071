//! The `mqtt` target: publishes the raw body at QoS 1 and counts the event
//! delivered only once the broker's PUBACK accepted it.
//!
//! With MQTT 5 (the default) the metadata travels as user properties, the
//! names of the `nats` target's headers: `Idempotency-Key` = the inbox id,
//! `X-Hookinbox-Provider`, `-Endpoint`, `-Event-Id`, `-Event-Type`, and
//! `X-Hookinbox-Unsigned` when some of it came from request values the
//! provider's signature does not cover; the content type as received is
//! the message's content type property. A PUBACK whose reason code is an
//! error (0x80 and above: not authorized, quota exceeded, …) is a failed
//! attempt. MQTT 3.1.1 has no properties: the body alone is published, and
//! a broker that refuses a publish cannot say so (it acknowledges it, or
//! closes the connection). No Standard Webhooks signature: the broker
//! authenticates its consumers.
//!
//! MQTT has no message id a broker deduplicates on: a crash between the
//! PUBACK and the DELIVERED record publishes the event again, with the same
//! `Idempotency-Key` (docs/architecture.md §5: delivery is at least once).
//!
//! One connection per target, opened at its first attempt (as the `nats`
//! target's: `serve --no-workers` never connects). rumqttc's event loop is
//! driven by a task of its own; attempts hand it publishes and wait for
//! their PUBACK. Packet ids are only known to the event loop, which reports
//! each publish it writes in the order it took them from its queue, so
//! publishes are queued and their waiters recorded under one lock, and the
//! n-th publish reported is the n-th waiter. When the connection is lost,
//! every publish not yet acknowledged fails as an attempt (the retry
//! policy sends it again), nothing is kept for a later session (it is a
//! clean one), and the task reconnects with a backoff; attempts meanwhile
//! wait for the connection up to the target's `timeout`, then fail as
//! `mqtt: not connected (…)`.
//!
//! Errors are written for `last_error`: the topic and what went wrong,
//! never the credentials or the broker's address.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use hookinbox_store::{LeasedDelivery, StoredEvent};
use rumqttc::v5::mqttbytes::v5::{PubAckReason, PublishProperties};
use rumqttc::{TlsConfiguration, Transport};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::{oneshot, watch, OnceCell};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::connect_failure;
use super::destination::{AttemptResult, Destination};
use super::http_target::unsigned_header;
use super::retry_policy::AttemptOutcome;
use crate::config::{ConfigError, MqttDestination, MqttProtocol, TemplateValues, TopicTemplate};
use crate::tls::client::TrustRoots;

/// Keep-alive asked of the broker: a connection that silently died is
/// noticed within about this long.
const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// First wait before reconnecting after a failure; doubled up to
/// [`RECONNECT_MAX`] while the broker stays away.
const RECONNECT_MIN: Duration = Duration::from_millis(50);
const RECONNECT_MAX: Duration = Duration::from_secs(2);

/// Publishes a target may have queued for its event loop beyond its
/// concurrency (attempts that timed out leave theirs behind).
const QUEUE_SLACK: usize = 64;

pub struct MqttTarget {
    options: ClientOptions,
    topic: TopicTemplate,
    timeout: Duration,
    connection: OnceCell<Connection>,
}

impl std::fmt::Debug for MqttTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MqttTarget")
            .field("topic", &self.topic)
            .field("protocol", &self.options.protocol)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// What the client is built from, read and checked at start-up.
struct ClientOptions {
    host: String,
    port: u16,
    protocol: MqttProtocol,
    username: Option<String>,
    password: Option<SecretString>,
    /// `mqtts://`: the TLS client configuration.
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
    queue_capacity: usize,
}

impl ClientOptions {
    /// The password as CONNECT carries it (empty when there is none).
    fn password_text(&self) -> &str {
        self.password
            .as_ref()
            .map_or("", |password| password.expose_secret())
    }
}

impl MqttTarget {
    /// Reads the password and the CA file; connects nothing yet. `field`
    /// names the target in errors (`endpoint[0].target[1]`).
    pub fn new(
        destination: &MqttDestination,
        concurrency: usize,
        field: &str,
    ) -> Result<MqttTarget, ConfigError> {
        let password = match &destination.password {
            Some(source) => Some(source.read(&format!("{field}.password"))?),
            None => None,
        };
        let tls = if destination.broker.tls {
            let roots = match &destination.ca_file {
                Some(path) => TrustRoots::from_ca_file(path, &format!("{field}.ca_file"))?,
                None => TrustRoots::Mozilla,
            };
            let config = roots.client_config().map_err(|e| {
                ConfigError::invalid(format!("{field}.url"), format!("cannot set up TLS: {e}"))
            })?;
            Some(Arc::new(config))
        } else {
            None
        };
        Ok(MqttTarget {
            options: ClientOptions {
                host: destination.broker.host.clone(),
                port: destination.broker.port,
                protocol: destination.protocol,
                username: destination.username.clone(),
                password,
                tls,
                timeout: destination.timeout,
                queue_capacity: concurrency.saturating_add(QUEUE_SLACK),
            },
            topic: destination.topic.clone(),
            timeout: destination.timeout,
            connection: OnceCell::new(),
        })
    }

    /// One attempt: connection, publish and PUBACK within `timeout`.
    pub async fn send(&self, event: &StoredEvent) -> AttemptOutcome {
        let deadline = Instant::now() + self.timeout;
        let connection = self
            .connection
            .get_or_init(|| async { Connection::open(&self.options) })
            .await;
        if !connection.wait_until_connected(deadline).await {
            return transient(connection.flight.not_connected());
        }
        let topic = self.topic.render(TemplateValues {
            provider: &event.provider,
            endpoint: &event.endpoint_id,
            event_type: event.event_type.as_deref(),
        });
        let body = event.payload.clone().unwrap_or_default();
        let acknowledged = match connection.publish(&topic, body, event) {
            Ok(acknowledged) => acknowledged,
            Err(problem) => return transient(problem),
        };
        match tokio::time::timeout_at(deadline, acknowledged).await {
            Ok(Ok(PublishResult::Accepted)) => AttemptOutcome::Delivered,
            Ok(Ok(PublishResult::Refused(reason))) => refused(reason, &topic),
            Ok(Ok(PublishResult::Lost)) => {
                transient("mqtt: connection lost before the PUBACK".to_owned())
            }
            Ok(Err(_)) => transient("mqtt: the client stopped before the PUBACK".to_owned()),
            Err(_) => transient(format!(
                "mqtt: PUBACK timeout after {} ms",
                self.timeout.as_millis()
            )),
        }
    }
}

#[async_trait]
impl Destination for MqttTarget {
    async fn attempt(&self, _lease: &LeasedDelivery, event: StoredEvent) -> AttemptResult {
        self.send(&event).await.into()
    }
}

/// How the broker answered one publish, as the event loop saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PublishResult {
    Accepted,
    /// An MQTT 5 PUBACK with an error reason code.
    Refused(PubAckReason),
    /// The connection ended before the PUBACK.
    Lost,
}

type Waiter = oneshot::Sender<PublishResult>;

/// The target's client and the task driving its event loop.
struct Connection {
    client: ProtocolClient,
    flight: Arc<Flight>,
    driver: AbortHandle,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl Connection {
    /// Builds the client and starts its event loop's task, which connects
    /// (and later reconnects) in the background.
    fn open(options: &ClientOptions) -> Connection {
        let (client, event_loop) = ProtocolClient::new(options);
        let flight = Arc::new(Flight::default());
        let driver = tokio::spawn(drive(event_loop, Arc::clone(&flight))).abort_handle();
        Connection {
            client,
            flight,
            driver,
        }
    }

    /// Whether the client is connected by `deadline`.
    async fn wait_until_connected(&self, deadline: Instant) -> bool {
        let mut changed = self.flight.changed.subscribe();
        loop {
            if self.flight.lock().connected {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                return self.flight.lock().connected;
            }
        }
    }

    /// Queues one publish; the answer comes once the broker acknowledged
    /// it or the connection ended.
    fn publish(
        &self,
        topic: &str,
        body: Bytes,
        event: &StoredEvent,
    ) -> Result<oneshot::Receiver<PublishResult>, String> {
        let (waiter, answer) = oneshot::channel();
        let mut state = self.flight.lock();
        if !state.connected {
            return Err(state.not_connected());
        }
        self.client
            .try_publish(topic, body, event)
            .map_err(|()| "mqtt: too many publishes waiting for the connection".to_owned())?;
        state.queued.push_back(waiter);
        Ok(answer)
    }
}

/// The publishes between the attempts and the event loop, and the
/// connection's state.
#[derive(Default)]
struct Flight {
    state: Mutex<FlightState>,
    /// Changes on every connect and disconnect: wakes attempts waiting for
    /// the connection.
    changed: watch::Sender<()>,
}

#[derive(Default)]
struct FlightState {
    connected: bool,
    /// Why the client is not connected, while it is not (never an address
    /// or a credential).
    problem: Option<String>,
    /// Waiters of publishes queued for the event loop and not yet written,
    /// oldest first: the event loop writes them in this order.
    queued: VecDeque<Waiter>,
    /// Waiters of publishes written, by packet id, until their PUBACK.
    written: HashMap<u16, Waiter>,
}

impl FlightState {
    fn not_connected(&self) -> String {
        match &self.problem {
            Some(problem) => format!("mqtt: not connected ({problem})"),
            None => "mqtt: not connected".to_owned(),
        }
    }
}

impl Flight {
    fn lock(&self) -> MutexGuard<'_, FlightState> {
        // Nothing panics while holding it; a poisoned state is still whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn not_connected(&self) -> String {
        self.lock().not_connected()
    }

    fn record(&self, event: LoopEvent) {
        let mut state = self.lock();
        match event {
            LoopEvent::Connected => {
                state.connected = true;
                state.problem = None;
                drop(state);
                self.changed.send_replace(());
            }
            LoopEvent::Written(packet_id) => {
                if let Some(waiter) = state.queued.pop_front() {
                    state.written.insert(packet_id, waiter);
                }
            }
            LoopEvent::Acknowledged { packet_id, refusal } => {
                if let Some(waiter) = state.written.remove(&packet_id) {
                    let result = refusal.map_or(PublishResult::Accepted, PublishResult::Refused);
                    let _ = waiter.send(result);
                }
            }
            LoopEvent::Other => {}
        }
    }

    /// The connection ended: every publish not acknowledged fails, and
    /// the event loop forgets them (`discard` runs under the lock, so no
    /// attempt queues a publish in between).
    fn lost(&self, problem: String, discard: impl FnOnce()) {
        let mut state = self.lock();
        discard();
        state.connected = false;
        state.problem = Some(problem);
        for waiter in state.queued.drain(..) {
            let _ = waiter.send(PublishResult::Lost);
        }
        for (_, waiter) in state.written.drain() {
            let _ = waiter.send(PublishResult::Lost);
        }
        drop(state);
        self.changed.send_replace(());
    }
}

/// Polls the event loop for as long as the target lives: the loop sends
/// the queued publishes, reads the PUBACKs and reconnects.
async fn drive(mut event_loop: ProtocolEventLoop, flight: Arc<Flight>) {
    let mut backoff = RECONNECT_MIN;
    loop {
        match event_loop.poll().await {
            Ok(event) => {
                if event == LoopEvent::Connected {
                    backoff = RECONNECT_MIN;
                }
                flight.record(event);
            }
            Err(problem) => {
                tracing::warn!(
                    message = "MQTT connection lost; reconnecting.",
                    problem = %problem
                );
                flight.lost(problem, || event_loop.discard_requests());
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(RECONNECT_MAX);
            }
        }
    }
}

/// What the target needs to know of one event-loop event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoopEvent {
    /// The broker accepted the connection (CONNACK).
    Connected,
    /// A QoS 1 publish was written with this packet id.
    Written(u16),
    /// The PUBACK of a packet id; `refusal` when its reason code is an error.
    Acknowledged {
        packet_id: u16,
        refusal: Option<PubAckReason>,
    },
    Other,
}

/// The client of the protocol version the target speaks.
enum ProtocolClient {
    V5(rumqttc::v5::AsyncClient),
    V311(rumqttc::AsyncClient),
}

/// Its event loop.
enum ProtocolEventLoop {
    V5(Box<rumqttc::v5::EventLoop>),
    V311(Box<rumqttc::EventLoop>),
}

impl ProtocolClient {
    fn new(options: &ClientOptions) -> (ProtocolClient, ProtocolEventLoop) {
        let client_id = client_id();
        let transport = match &options.tls {
            Some(config) => {
                Transport::tls_with_config(TlsConfiguration::Rustls(Arc::clone(config)))
            }
            None => Transport::tcp(),
        };
        let connect_seconds = options.timeout.as_secs().max(1);
        let mut network = rumqttc::NetworkOptions::new();
        network.set_tcp_nodelay(true);
        network.set_connection_timeout(connect_seconds);
        match options.protocol {
            MqttProtocol::V5 => {
                let mut mqtt =
                    rumqttc::v5::MqttOptions::new(client_id, options.host.clone(), options.port);
                mqtt.set_transport(transport)
                    .set_keep_alive(KEEP_ALIVE)
                    .set_clean_start(true)
                    .set_connection_timeout(connect_seconds)
                    .set_network_options(network);
                if let Some(user) = &options.username {
                    mqtt.set_credentials(user.clone(), options.password_text());
                }
                let (client, event_loop) =
                    rumqttc::v5::AsyncClient::new(mqtt, options.queue_capacity);
                (
                    ProtocolClient::V5(client),
                    ProtocolEventLoop::V5(Box::new(event_loop)),
                )
            }
            MqttProtocol::V311 => {
                let mut mqtt =
                    rumqttc::MqttOptions::new(client_id, options.host.clone(), options.port);
                mqtt.set_transport(transport)
                    .set_keep_alive(KEEP_ALIVE)
                    .set_clean_session(true);
                if let Some(user) = &options.username {
                    mqtt.set_credentials(user.clone(), options.password_text());
                }
                let (client, mut event_loop) =
                    rumqttc::AsyncClient::new(mqtt, options.queue_capacity);
                event_loop.set_network_options(network);
                (
                    ProtocolClient::V311(client),
                    ProtocolEventLoop::V311(Box::new(event_loop)),
                )
            }
        }
    }

    /// Queues a QoS 1 publish without waiting; `Err` when the queue is full.
    fn try_publish(&self, topic: &str, body: Bytes, event: &StoredEvent) -> Result<(), ()> {
        match self {
            ProtocolClient::V5(client) => client
                .try_publish_with_properties(
                    topic,
                    rumqttc::v5::mqttbytes::QoS::AtLeastOnce,
                    false,
                    body,
                    properties(event),
                )
                .map_err(|_| ()),
            ProtocolClient::V311(client) => client
                .try_publish(topic, rumqttc::QoS::AtLeastOnce, false, body.to_vec())
                .map_err(|_| ()),
        }
    }
}

impl ProtocolEventLoop {
    /// The next event, or why the connection ended (or could not be made).
    async fn poll(&mut self) -> Result<LoopEvent, String> {
        use rumqttc::v5::mqttbytes::v5::Packet as Packet5;
        use rumqttc::v5::Event as Event5;
        use rumqttc::{Event, Outgoing, Packet};
        match self {
            ProtocolEventLoop::V5(event_loop) => match event_loop.poll().await {
                Ok(Event5::Incoming(Packet5::ConnAck(_))) => Ok(LoopEvent::Connected),
                Ok(Event5::Incoming(Packet5::PubAck(ack))) => Ok(LoopEvent::Acknowledged {
                    packet_id: ack.pkid,
                    refusal: refusal_code(ack.reason).map(|_| ack.reason),
                }),
                Ok(Event5::Outgoing(Outgoing::Publish(packet_id))) if packet_id != 0 => {
                    Ok(LoopEvent::Written(packet_id))
                }
                Ok(_) => Ok(LoopEvent::Other),
                Err(error) => Err(describe_v5(&error)),
            },
            ProtocolEventLoop::V311(event_loop) => match event_loop.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(_))) => Ok(LoopEvent::Connected),
                Ok(Event::Incoming(Packet::PubAck(ack))) => Ok(LoopEvent::Acknowledged {
                    packet_id: ack.pkid,
                    refusal: None,
                }),
                Ok(Event::Outgoing(Outgoing::Publish(packet_id))) if packet_id != 0 => {
                    Ok(LoopEvent::Written(packet_id))
                }
                Ok(_) => Ok(LoopEvent::Other),
                Err(error) => Err(describe_v311(&error)),
            },
        }
    }

    /// Forgets every request not yet acknowledged, queued or kept for the
    /// next session: their attempts have failed.
    fn discard_requests(&mut self) {
        match self {
            ProtocolEventLoop::V5(event_loop) => {
                event_loop.clean();
                event_loop.pending.clear();
            }
            ProtocolEventLoop::V311(event_loop) => {
                event_loop.clean();
                event_loop.pending.clear();
            }
        }
    }
}

/// A client id of its own for every connection: a broker closes the older
/// of two connections with one id, and several processes deliver to the
/// same broker. At most 23 characters, which every 3.1.1 broker accepts.
fn client_id() -> String {
    format!("hookinbox-{:013x}", rand::random::<u64>() >> 12)
}

/// The MQTT 5 properties of one event's message (see the module's
/// documentation). A value an MQTT string should not hold (a control
/// character in a provider's event id) is left out, as the `http` target
/// leaves out a header it cannot send.
fn properties(event: &StoredEvent) -> PublishProperties {
    let mut user_properties = Vec::with_capacity(6);
    let mut insert = |name: &str, value: &str| {
        if !value.chars().any(char::is_control) {
            user_properties.push((name.to_owned(), value.to_owned()));
        }
    };
    insert("Idempotency-Key", &event.id);
    insert("X-Hookinbox-Provider", &event.provider);
    insert("X-Hookinbox-Endpoint", &event.endpoint_id);
    insert("X-Hookinbox-Event-Id", &event.provider_event_id);
    if let Some(event_type) = &event.event_type {
        insert("X-Hookinbox-Event-Type", event_type);
    }
    if let Some(unsigned) = unsigned_header(&event.unsigned_metadata) {
        insert("X-Hookinbox-Unsigned", &unsigned);
    }
    // The running attempt's `traceparent` (docs/architecture.md §7).
    for (name, value) in crate::traces::propagation_headers() {
        insert(name, &value);
    }
    let content_type = event
        .content_type
        .as_deref()
        .unwrap_or("application/octet-stream");
    PublishProperties {
        user_properties,
        content_type: (!content_type.chars().any(char::is_control))
            .then(|| content_type.to_owned()),
        ..PublishProperties::default()
    }
}

/// The reason code of a PUBACK that refuses the publish (0x80 and above),
/// `None` when it accepted it.
fn refusal_code(reason: PubAckReason) -> Option<u8> {
    match reason {
        PubAckReason::Success | PubAckReason::NoMatchingSubscribers => None,
        PubAckReason::UnspecifiedError => Some(0x80),
        PubAckReason::ImplementationSpecificError => Some(0x83),
        PubAckReason::NotAuthorized => Some(0x87),
        PubAckReason::TopicNameInvalid => Some(0x90),
        PubAckReason::PacketIdentifierInUse => Some(0x91),
        PubAckReason::QuotaExceeded => Some(0x97),
        PubAckReason::PayloadFormatInvalid => Some(0x99),
    }
}

/// A refused publish: a failed attempt, retried by the target's policy
/// (an ACL or a quota can change) but one the broker can never take.
fn refused(reason: PubAckReason, topic: &str) -> AttemptOutcome {
    let code = refusal_code(reason).unwrap_or(0x80);
    let error =
        format!("mqtt: the broker refused the publish to {topic}: {reason:?} (0x{code:02x})");
    match reason {
        PubAckReason::PayloadFormatInvalid => AttemptOutcome::Permanent { error },
        _ => transient(error),
    }
}

fn describe_v5(error: &rumqttc::v5::ConnectionError) -> String {
    use rumqttc::v5::{ConnectionError, StateError};
    match error {
        ConnectionError::Io(io) => connect_failure::describe(io).to_owned(),
        ConnectionError::Timeout(_) => "connect error: timed out".to_owned(),
        ConnectionError::Tls(tls) => tls_failure(tls),
        ConnectionError::ConnectionRefused(code) => {
            format!("the broker refused the connection: {code:?}")
        }
        ConnectionError::MqttState(StateError::ServerDisconnect { reason_code, .. }) => {
            format!("the broker closed the connection: {reason_code:?}")
        }
        ConnectionError::MqttState(StateError::Io(io)) => connect_failure::describe(io).to_owned(),
        ConnectionError::MqttState(StateError::AwaitPingResp) => {
            "the broker stopped answering pings".to_owned()
        }
        ConnectionError::MqttState(StateError::OutgoingPacketTooLarge { max, .. }) => {
            format!("a message is larger than the broker's maximum packet size ({max} bytes)")
        }
        _ => "connection lost".to_owned(),
    }
}

fn describe_v311(error: &rumqttc::ConnectionError) -> String {
    use rumqttc::{ConnectionError, StateError};
    match error {
        ConnectionError::Io(io) => connect_failure::describe(io).to_owned(),
        ConnectionError::NetworkTimeout => "connect error: timed out".to_owned(),
        ConnectionError::Tls(tls) => tls_failure(tls),
        ConnectionError::ConnectionRefused(code) => {
            format!("the broker refused the connection: {code:?}")
        }
        ConnectionError::MqttState(StateError::Io(io)) => connect_failure::describe(io).to_owned(),
        ConnectionError::MqttState(StateError::AwaitPingResp) => {
            "the broker stopped answering pings".to_owned()
        }
        _ => "connection lost".to_owned(),
    }
}

/// A TLS failure in fixed words (the certificate's names stay out).
fn tls_failure(error: &rumqttc::TlsError) -> String {
    let cause = crate::tls::client::describe_failure(error).unwrap_or("TLS handshake failed");
    cause.to_owned()
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
            payload: Some(bytes::Bytes::from_static(b"{}")),
            unsigned_metadata: UnsignedMetadata {
                event_id: true,
                event_type: true,
            },
            trace_parent: None,
        }
    }

    fn value<'a>(properties: &'a PublishProperties, name: &str) -> Option<&'a str> {
        properties
            .user_properties
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    #[test]
    fn properties_carry_the_inbox_id_and_the_metadata() {
        let properties = properties(&event());
        assert_eq!(value(&properties, "Idempotency-Key"), Some("0190-inbox-id"));
        assert_eq!(value(&properties, "X-Hookinbox-Provider"), Some("github"));
        assert_eq!(value(&properties, "X-Hookinbox-Endpoint"), Some("gh"));
        assert_eq!(
            value(&properties, "X-Hookinbox-Event-Id"),
            Some("delivery-1")
        );
        assert_eq!(value(&properties, "X-Hookinbox-Event-Type"), Some("push"));
        assert_eq!(
            value(&properties, "X-Hookinbox-Unsigned"),
            Some("event-id, event-type")
        );
        assert_eq!(properties.content_type.as_deref(), Some("application/json"));
    }

    #[test]
    fn a_value_with_a_control_character_is_left_out() {
        let mut signed = event();
        signed.unsigned_metadata = UnsignedMetadata::default();
        signed.event_type = Some("line\r\nInjected: yes".into());
        signed.provider_event_id = "nul\0".into();
        let properties = properties(&signed);
        assert_eq!(value(&properties, "X-Hookinbox-Event-Type"), None);
        assert_eq!(value(&properties, "X-Hookinbox-Event-Id"), None);
        assert_eq!(value(&properties, "X-Hookinbox-Unsigned"), None);
        assert_eq!(value(&properties, "Idempotency-Key"), Some("0190-inbox-id"));
    }

    #[test]
    fn a_refusing_pub_ack_is_a_failed_attempt_naming_its_reason() {
        assert_eq!(refusal_code(PubAckReason::Success), None);
        assert_eq!(refusal_code(PubAckReason::NoMatchingSubscribers), None);
        assert_eq!(
            refused(PubAckReason::NotAuthorized, "hooks/gh/push"),
            transient(
                "mqtt: the broker refused the publish to hooks/gh/push: NotAuthorized (0x87)"
                    .into()
            )
        );
        assert!(matches!(
            refused(PubAckReason::QuotaExceeded, "t"),
            AttemptOutcome::Transient { .. }
        ));
        assert!(matches!(
            refused(PubAckReason::PayloadFormatInvalid, "t"),
            AttemptOutcome::Permanent { .. }
        ));
    }

    #[test]
    fn waiters_are_matched_to_packet_ids_in_queue_order() {
        let flight = Flight::default();
        let mut answers = Vec::new();
        for _ in 0..3 {
            let (waiter, answer) = oneshot::channel();
            flight.lock().queued.push_back(waiter);
            answers.push(answer);
        }
        flight.record(LoopEvent::Written(7));
        flight.record(LoopEvent::Written(8));
        flight.record(LoopEvent::Acknowledged {
            packet_id: 8,
            refusal: Some(PubAckReason::NotAuthorized),
        });
        flight.record(LoopEvent::Acknowledged {
            packet_id: 7,
            refusal: None,
        });
        // An acknowledgement of a publish nobody waits for changes nothing.
        flight.record(LoopEvent::Acknowledged {
            packet_id: 99,
            refusal: None,
        });
        flight.lost("connection lost".into(), || {});
        let results: Vec<_> = answers
            .into_iter()
            .map(|mut answer| answer.try_recv().unwrap())
            .collect();
        assert_eq!(
            results,
            [
                PublishResult::Accepted,
                PublishResult::Refused(PubAckReason::NotAuthorized),
                PublishResult::Lost
            ]
        );
        assert_eq!(
            flight.not_connected(),
            "mqtt: not connected (connection lost)"
        );
    }

    #[test]
    fn client_ids_fit_every_broker() {
        let id = client_id();
        assert!(id.len() <= 23, "{id}");
        assert_ne!(id, client_id());
    }
}
