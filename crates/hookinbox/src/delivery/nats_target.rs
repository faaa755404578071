//! The `nats` target: publishes the raw body to a JetStream stream and
//! counts the event delivered only once the stream's PubAck says it is
//! stored.
//!
//! Headers sent (the names of the `http` target where the meaning is the
//! same): `Nats-Msg-Id` and `Idempotency-Key` = the inbox id,
//! `Content-Type` as received, `X-Hookinbox-Provider`, `-Endpoint`,
//! `-Event-Id`, `-Event-Type`, and `X-Hookinbox-Unsigned` when some of that
//! metadata came from request values the provider's signature does not
//! cover. No Standard Webhooks signature: consumers are authenticated by
//! NATS itself.
//!
//! `Nats-Msg-Id` makes a retry after a crash between the PubAck and the
//! DELIVERED record harmless: JetStream drops a second message with the
//! same id inside the stream's `duplicate_window` (and acknowledges it as a
//! duplicate, which counts as delivered).
//!
//! One client per target, connected at its first attempt (a target that
//! never delivers, as under `serve --no-workers`, never connects; a NATS
//! outage at start-up delays nothing). The client reconnects by itself for
//! as long as the process runs; an attempt waits for a connection up to the
//! target's `timeout`, then fails as `nats: not connected`.
//!
//! Errors are written for `last_error`: the subject and what went wrong,
//! never the credentials or a server URL.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::connection::State;
use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::{ConnectOptions, Event, HeaderMap, HeaderValue, ServerAddr};
use async_trait::async_trait;
use hookinbox_store::{LeasedDelivery, StoredEvent};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::{watch, OnceCell};
use tokio::time::Instant;

use super::destination::{AttemptResult, Destination};
use super::http_target::unsigned_header;
use super::retry_policy::AttemptOutcome;
use crate::config::{ConfigError, NatsDestination, SecretSource, SubjectTemplate};

/// Longest server text kept in `last_error`.
const MAX_ERROR_CHARS: usize = 200;

/// How often an attempt waiting for the connection looks at its state,
/// besides being woken by the client's connection events.
const CONNECTION_RECHECK: Duration = Duration::from_millis(25);

pub struct NatsTarget {
    servers: Vec<ServerAddr>,
    subject: SubjectTemplate,
    /// The `.creds` file's text, read and checked at start-up.
    credentials: Option<SecretString>,
    timeout: Duration,
    connection: OnceCell<Connection>,
}

impl std::fmt::Debug for NatsTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsTarget")
            .field("subject", &self.subject)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The target's client, once its first attempt made it.
struct Connection {
    client: async_nats::Client,
    jetstream: async_nats::jetstream::Context,
    events: Arc<ConnectionEvents>,
}

/// What the client reports about its connection, as it happens.
struct ConnectionEvents {
    /// Changes on every event: wakes attempts waiting for the connection.
    changed: watch::Sender<()>,
    /// Why the client is not connected, while it is not (a connect error's
    /// kind or the server's `-ERR`, never a URL or a credential).
    problem: Mutex<Option<String>>,
}

impl ConnectionEvents {
    fn new() -> ConnectionEvents {
        ConnectionEvents {
            changed: watch::channel(()).0,
            problem: Mutex::new(None),
        }
    }

    fn record(&self, event: Event) {
        let problem = match event {
            Event::Connected => None,
            Event::ServerError(error) => Some(error.to_string()),
            Event::ClientError(error) => Some(error.to_string()),
            _ => return self.changed.send_replace(()),
        };
        // The client's texts start with "nats: " too.
        let problem = problem.map(|text| {
            let text = text.strip_prefix("nats: ").unwrap_or(&text);
            text.chars().take(MAX_ERROR_CHARS).collect()
        });
        if let Ok(mut slot) = self.problem.lock() {
            *slot = problem;
        }
        self.changed.send_replace(());
    }

    fn not_connected(&self) -> String {
        match self.problem.lock().ok().and_then(|slot| slot.clone()) {
            Some(problem) => format!("nats: not connected ({problem})"),
            None => "nats: not connected".to_owned(),
        }
    }
}

impl NatsTarget {
    /// Reads and checks the credentials file; connects nothing yet. `field`
    /// names the target in errors (`endpoint[0].target[1]`).
    pub fn new(destination: &NatsDestination, field: &str) -> Result<NatsTarget, ConfigError> {
        let credentials = match &destination.credentials_file {
            Some(path) => {
                // Read as every secret file is: its errors name the field.
                let source = SecretSource::File(path.clone());
                let field = format!("{field}.credentials");
                let text = source.read(&field)?;
                // The parser's complaint names what is missing, never the text.
                ConnectOptions::with_credentials(text.expose_secret()).map_err(|error| {
                    ConfigError::invalid(
                        source.field_name(&field),
                        format!(
                            "{} is not a NATS credentials file (a user JWT and an nkey seed): {error}",
                            source.describe()
                        ),
                    )
                })?;
                Some(text)
            }
            None => None,
        };
        Ok(NatsTarget {
            servers: destination.servers.clone(),
            subject: destination.subject.clone(),
            credentials,
            timeout: destination.timeout,
            connection: OnceCell::new(),
        })
    }

    /// One attempt: connection, publish and PubAck within `timeout`.
    pub async fn send(&self, event: &StoredEvent) -> AttemptOutcome {
        let deadline = Instant::now() + self.timeout;
        let connection = match self.connection.get_or_try_init(|| self.connect()).await {
            Ok(connection) => connection,
            Err(error) => return transient(error),
        };
        if !connection.wait_until_connected(deadline).await {
            return transient(connection.events.not_connected());
        }
        let subject = self
            .subject
            .render(&event.endpoint_id, event.event_type.as_deref());
        let body = event.payload.clone().unwrap_or_default();
        let publish = async {
            connection
                .jetstream
                .publish_with_headers(subject.clone(), headers(event), body)
                .await?
                .await
        };
        match tokio::time::timeout_at(deadline, publish).await {
            Ok(Ok(_ack)) => AttemptOutcome::Delivered,
            Ok(Err(error)) => classify(&error, &subject, self.timeout),
            Err(_) => transient(pub_ack_timeout(self.timeout)),
        }
    }

    /// Starts the client; it connects (and later reconnects) in the
    /// background, so this returns at once.
    async fn connect(&self) -> Result<Connection, String> {
        let options = match &self.credentials {
            Some(text) => ConnectOptions::with_credentials(text.expose_secret())
                .map_err(|_| "nats: the credentials file cannot be used".to_owned())?,
            None => ConnectOptions::new(),
        };
        let events = Arc::new(ConnectionEvents::new());
        let sink = Arc::clone(&events);
        let client = options
            .name("hookinbox")
            .retry_on_initial_connect()
            .max_reconnects(None)
            .connection_timeout(self.timeout)
            .event_callback(move |event| {
                let sink = Arc::clone(&sink);
                async move { sink.record(event) }
            })
            .connect(self.servers.clone())
            .await
            .map_err(|error| format!("nats: cannot start the client: {}", error.kind()))?;
        let mut jetstream = async_nats::jetstream::new(client.clone());
        jetstream.set_timeout(self.timeout);
        Ok(Connection {
            client,
            jetstream,
            events,
        })
    }
}

#[async_trait]
impl Destination for NatsTarget {
    async fn attempt(&self, _lease: &LeasedDelivery, event: StoredEvent) -> AttemptResult {
        self.send(&event).await.into()
    }
}

impl Connection {
    /// Whether the client is connected by `deadline`.
    async fn wait_until_connected(&self, deadline: Instant) -> bool {
        let mut changed = self.events.changed.subscribe();
        loop {
            if self.client.connection_state() == State::Connected {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            // The client reports a connection just before its state says so:
            // look again shortly after an event, and now and then anyway.
            let recheck = (Instant::now() + CONNECTION_RECHECK).min(deadline);
            tokio::select! {
                _ = changed.changed() => {}
                () = tokio::time::sleep_until(recheck) => {}
            }
        }
    }
}

/// The message's headers (see the module's documentation). A value that
/// cannot be a NATS header value (a line break in a provider's event id)
/// is left out, as the `http` target does.
fn headers(event: &StoredEvent) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let mut insert = |name: &'static str, value: &str| {
        if let Ok(value) = value.parse::<HeaderValue>() {
            headers.insert(name, value);
        }
    };
    insert("Nats-Msg-Id", &event.id);
    insert("Idempotency-Key", &event.id);
    insert(
        "Content-Type",
        event
            .content_type
            .as_deref()
            .unwrap_or("application/octet-stream"),
    );
    insert("X-Hookinbox-Provider", &event.provider);
    insert("X-Hookinbox-Endpoint", &event.endpoint_id);
    insert("X-Hookinbox-Event-Id", &event.provider_event_id);
    if let Some(event_type) = &event.event_type {
        insert("X-Hookinbox-Event-Type", event_type);
    }
    if let Some(unsigned) = unsigned_header(&event.unsigned_metadata) {
        insert("X-Hookinbox-Unsigned", &unsigned);
    }
    // The attempt's span, so the consumer's spans join the event's trace.
    for (name, value) in crate::traces::propagation_headers() {
        insert(name, &value);
    }
    headers
}

/// Maps a failed publish to an attempt outcome. Everything is retried but a
/// message the server can never take.
fn classify(error: &PublishError, subject: &str, timeout: Duration) -> AttemptOutcome {
    let message = match error.kind() {
        PublishErrorKind::StreamNotFound => format!("nats: no stream for subject {subject}"),
        PublishErrorKind::TimedOut => pub_ack_timeout(timeout),
        PublishErrorKind::BrokenPipe => "nats: connection lost before the PubAck".to_owned(),
        PublishErrorKind::MaxAckPending => "nats: too many PubAcks pending".to_owned(),
        PublishErrorKind::MaxPayloadExceeded => {
            return AttemptOutcome::Permanent {
                error: "nats: the message is larger than the server's max_payload".to_owned(),
            }
        }
        PublishErrorKind::WrongLastMessageId
        | PublishErrorKind::WrongLastSequence
        | PublishErrorKind::Other => {
            let detail: String = error.to_string().chars().take(MAX_ERROR_CHARS).collect();
            format!("nats: publish to {subject} failed: {detail}")
        }
    };
    transient(message)
}

fn pub_ack_timeout(timeout: Duration) -> String {
    format!("nats: PubAck timeout after {} ms", timeout.as_millis())
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

    fn value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
        headers.get(name).map(HeaderValue::as_str)
    }

    #[test]
    fn headers_carry_the_inbox_id_and_the_metadata() {
        let headers = headers(&event());
        assert_eq!(value(&headers, "Nats-Msg-Id"), Some("0190-inbox-id"));
        assert_eq!(value(&headers, "Idempotency-Key"), Some("0190-inbox-id"));
        assert_eq!(value(&headers, "Content-Type"), Some("application/json"));
        assert_eq!(value(&headers, "X-Hookinbox-Provider"), Some("github"));
        assert_eq!(value(&headers, "X-Hookinbox-Endpoint"), Some("gh"));
        assert_eq!(value(&headers, "X-Hookinbox-Event-Id"), Some("delivery-1"));
        assert_eq!(value(&headers, "X-Hookinbox-Event-Type"), Some("push"));
        assert_eq!(
            value(&headers, "X-Hookinbox-Unsigned"),
            Some("event-id, event-type")
        );
    }

    #[test]
    fn a_value_that_cannot_be_a_header_is_left_out() {
        let mut signed = event();
        signed.unsigned_metadata = UnsignedMetadata::default();
        signed.event_type = Some("line\r\nInjected: yes".into());
        let headers = headers(&signed);
        assert_eq!(value(&headers, "X-Hookinbox-Event-Type"), None);
        assert_eq!(value(&headers, "Injected"), None);
        assert_eq!(value(&headers, "X-Hookinbox-Unsigned"), None);
        assert_eq!(value(&headers, "Nats-Msg-Id"), Some("0190-inbox-id"));
    }

    #[test]
    fn publish_failures_are_retried_but_an_oversized_message() {
        let timeout = Duration::from_millis(1500);
        let outcome = |kind| classify(&PublishError::new(kind), "hooks.gh.push", timeout);
        assert_eq!(
            outcome(PublishErrorKind::StreamNotFound),
            transient("nats: no stream for subject hooks.gh.push".into())
        );
        assert_eq!(
            outcome(PublishErrorKind::TimedOut),
            transient("nats: PubAck timeout after 1500 ms".into())
        );
        for kind in [
            PublishErrorKind::BrokenPipe,
            PublishErrorKind::MaxAckPending,
            PublishErrorKind::Other,
        ] {
            assert!(
                matches!(outcome(kind), AttemptOutcome::Transient { .. }),
                "{kind:?}"
            );
        }
        assert!(matches!(
            outcome(PublishErrorKind::MaxPayloadExceeded),
            AttemptOutcome::Permanent { .. }
        ));
    }
}
