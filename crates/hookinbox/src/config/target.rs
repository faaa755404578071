//! `[[endpoint.target]]`, as parsed (the `*File`
//! structs) and checked: where events go and the retry budget.
//! What a kind of target takes is in its variant, so an `http` target
//! without a URL or a `handler` target with a secret cannot be represented.

use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::ServerAddr;
use hyper::Uri;
use secrecy::SecretString;
use serde::{Deserialize, Serialize, Serializer};

use crate::routing::{EventTypePatterns, RoutedEvent, TargetFilter, TargetRoute};

use super::checks::{non_zero_u32, non_zero_usize, positive};
use super::flow_control::{CircuitBreakerSettings, FlowControl, TargetRateLimit};
use super::mqtt_destination::{mqtt_destination, MqttDestination, MqttProtocol};
use super::nats_subject::SubjectTemplate;
use super::rabbitmq_target::{rabbitmq_destination, RabbitmqDestination, RABBITMQ_FIELDS};
use super::redis_stream_target::{
    redis_stream_destination, RedisStreamDestination, REDIS_STREAM_FIELDS,
};
use super::secret_source::{SecretFields, SecretSource};
use super::ConfigError;

/// One delivery target of an endpoint.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// Unique within the endpoint; a handler target's handler is registered under it.
    pub name: String,
    /// `kind`, with what that kind needs.
    #[serde(flatten)]
    pub kind: TargetKind,
    /// `event_types` and `filter`: which events it gets.
    #[serde(flatten)]
    pub route: TargetRoute,
    /// `transform`: a JavaScript file (resolved against the config file's
    /// directory) reshaping each delivery (`crate::transform`).
    pub transform: Option<PathBuf>,
    /// `body`: how a form-encoded body is delivered.
    pub body: DeliveredBody,
    /// `delay`, `rate_limit` and `circuit_breaker`: when and how fast.
    #[serde(flatten)]
    pub flow: FlowControl,
    /// Attempts before the delivery is dead.
    pub max_attempts: NonZeroU32,
    /// Oldest a delivery may get before it is dead.
    #[serde(with = "humantime_serde")]
    pub max_age: Duration,
    /// Deliveries in flight to this target at once.
    pub concurrency: NonZeroUsize,
    /// The first retry waits up to this; each later one up to twice the
    /// previous (full jitter).
    #[serde(with = "humantime_serde")]
    pub retry_base: Duration,
    /// Longest wait between two attempts.
    #[serde(with = "humantime_serde")]
    pub retry_cap: Duration,
}

/// What kind of system a target is, with what that kind needs.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TargetKind {
    /// POST to a URL (`delivery::http_target`).
    Http(HttpDestination),
    /// A library handler, run by the workers in the transaction that marks
    /// the delivery DELIVERED (`delivery::handler_target`).
    Handler,
    /// A JetStream publish, DELIVERED once the stream acknowledged it
    /// (`delivery::nats_target`).
    Nats(NatsDestination),
    /// An AMQP 0-9-1 publish, DELIVERED once the broker confirmed it
    /// (`delivery::rabbitmq_target`).
    Rabbitmq(RabbitmqDestination),
    /// An `XADD` to a Redis stream, DELIVERED once Redis answered it
    /// (`delivery::redis_stream_target`).
    RedisStream(RedisStreamDestination),
    /// A QoS 1 MQTT publish, DELIVERED once the broker's PUBACK accepted
    /// it (`delivery::mqtt_target`).
    Mqtt(MqttDestination),
}

impl TargetKind {
    /// As `kind` is spelled in the file.
    pub fn name(&self) -> &'static str {
        match self {
            TargetKind::Http(_) => "http",
            TargetKind::Handler => "handler",
            TargetKind::Nats(_) => "nats",
            TargetKind::Rabbitmq(_) => "rabbitmq",
            TargetKind::RedisStream(_) => "redis_stream",
            TargetKind::Mqtt(_) => "mqtt",
        }
    }
}

/// An `http` target's URL, signing secret and TLS roots.
#[derive(Debug, Clone, Serialize)]
pub struct HttpDestination {
    /// `http://` or `https://`, with a host.
    #[serde(serialize_with = "serialize_uri")]
    pub url: Uri,
    /// Where the secret that signs deliveries comes from.
    pub secret: SecretSource,
    /// Only on `https://` URLs; resolved against the config file's directory.
    pub ca_file: Option<PathBuf>,
    /// Time an attempt may take, answer included.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

impl HttpDestination {
    /// Whether the URL is `https://`.
    pub fn is_https(&self) -> bool {
        self.url.scheme_str() == Some("https")
    }
}

/// A `nats` target's servers, subject and credentials.
#[derive(Debug, Clone, Serialize)]
pub struct NatsDestination {
    /// One or more `nats://` servers of one cluster, without credentials in
    /// them; the client reconnects to any of them.
    #[serde(rename = "url", serialize_with = "serialize_servers")]
    pub servers: Vec<ServerAddr>,
    /// Where each event is published: `{endpoint}` and `{event_type}` each
    /// fill one token (see `SubjectTemplate`).
    pub subject: SubjectTemplate,
    /// A `.creds` file (user JWT and nkey seed), resolved against the
    /// config file's directory; read at start-up like every secret.
    pub credentials_file: Option<PathBuf>,
    /// How long one attempt waits for a connection and the PubAck.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

/// As the file spells it: the servers' URLs joined by commas.
fn serialize_servers<S: Serializer>(
    servers: &[ServerAddr],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let urls: Vec<&str> = servers.iter().map(ServerAddr::as_url_str).collect();
    serializer.collect_str(&urls.join(","))
}

fn serialize_uri<S: Serializer>(uri: &Uri, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(uri)
}

impl Target {
    /// `field` names the target in errors (`endpoint[0].target[1]`).
    pub(super) fn from_file(
        file: TargetFile,
        field: &str,
        base_dir: &Path,
    ) -> Result<Target, ConfigError> {
        let sub = |name: &str| format!("{field}.{name}");
        let kind = match file.kind {
            TargetKindName::Handler => {
                HANDLER_FIELDS.refuse_others(&file, field)?;
                TargetKind::Handler
            }
            TargetKindName::Http => {
                HTTP_FIELDS.refuse_others(&file, field)?;
                TargetKind::Http(http_destination(&file, field, base_dir)?)
            }
            TargetKindName::Nats => {
                NATS_FIELDS.refuse_others(&file, field)?;
                TargetKind::Nats(nats_destination(&file, field, base_dir)?)
            }
            TargetKindName::Rabbitmq => {
                RABBITMQ_FIELDS.refuse_others(&file, field)?;
                TargetKind::Rabbitmq(rabbitmq_destination(&file, field, base_dir)?)
            }
            TargetKindName::RedisStream => {
                REDIS_STREAM_FIELDS.refuse_others(&file, field)?;
                TargetKind::RedisStream(redis_stream_destination(&file, field, base_dir)?)
            }
            TargetKindName::Mqtt => {
                MQTT_FIELDS.refuse_others(&file, field)?;
                TargetKind::Mqtt(mqtt_destination(&file, field, base_dir)?)
            }
        };
        let route = target_route(&file, field)?;
        let flow = FlowControl::check(file.delay, file.rate_limit, file.circuit_breaker, field)?;
        Ok(Target {
            name: file.name,
            kind,
            route,
            transform: file.transform.as_ref().map(|path| base_dir.join(path)),
            body: file.body.unwrap_or_default(),
            flow,
            max_attempts: non_zero_u32(file.max_attempts, &sub("max_attempts"))?,
            max_age: positive(file.max_age, &sub("max_age"))?,
            concurrency: non_zero_usize(file.concurrency, &sub("concurrency"))?,
            retry_base: file.retry_base,
            retry_cap: file.retry_cap,
        })
    }
}

/// `event_types` and `filter`, compiled; errors name the target and, for
/// a filter that does not parse, the line and column.
fn target_route(file: &TargetFile, field: &str) -> Result<TargetRoute, ConfigError> {
    let event_types = file
        .event_types
        .as_deref()
        .map(EventTypePatterns::compile)
        .transpose()
        .map_err(|why| {
            ConfigError::invalid(
                format!("{field}.event_types"),
                format!("target `{}`: {why}", file.name),
            )
        })?;
    let filter = file
        .filter
        .as_deref()
        .map(TargetFilter::compile)
        .transpose()
        .map_err(|why| {
            ConfigError::invalid(
                format!("{field}.filter"),
                format!("target `{}`: {why}", file.name),
            )
        })?;
    Ok(TargetRoute {
        event_types,
        filter,
    })
}

impl Target {
    /// Runs the target's `filter` over the sample events of `provider`
    /// that `hookinbox send` bundles (real payloads): a filter that
    /// compares or computes with values of the wrong type there is refused,
    /// naming the target, the sample and the position.
    pub(super) fn check_filter_over_samples(
        &self,
        provider: &str,
        endpoint: &str,
        field: &str,
    ) -> Result<(), ConfigError> {
        let Some(filter) = &self.route.filter else {
            return Ok(());
        };
        for sample in crate::commands::send::samples::of(Some(provider)) {
            let headers: Vec<(String, String)> = sample
                .headers
                .iter()
                .map(|(name, value)| (name.to_ascii_lowercase(), (*value).to_owned()))
                .collect();
            let event = RoutedEvent {
                provider,
                endpoint,
                id: "sample",
                event_type: Some(sample.name),
                received_at_ms: 0,
                matched_secret_version: "sample",
                headers: &headers,
                content_type: Some("application/json"),
                body: sample.body,
            };
            let name = format!("the {provider} sample event `{}`", sample.name);
            filter.check_over(&event, &name).map_err(|why| {
                ConfigError::invalid(
                    format!("{field}.filter"),
                    format!("target `{}`: {why}", self.name),
                )
            })?;
        }
        Ok(())
    }
}

/// The fields of `[[endpoint.target]]` that only some kinds take, which a
/// kind declares it takes (docs/architecture.md §5). Each kind has its own
/// declaration beside the function that builds it, so adding a kind edits
/// no other kind's; a new field is listed once, in
/// [`TargetFile::kind_fields`].
pub(super) struct KindFields {
    /// The kind-specific fields this kind reads.
    pub(super) takes: &'static [&'static str],
    /// Why any other is refused, in the words of this kind.
    pub(super) refusal: &'static str,
}

impl KindFields {
    /// Refuses the first field `file` sets that this kind does not take,
    /// naming it (`endpoint[0].target[1].subject`).
    fn refuse_others(&self, file: &TargetFile, field: &str) -> Result<(), ConfigError> {
        let refused = file
            .kind_fields()
            .into_iter()
            .find(|(name, is_set)| *is_set && !self.takes.contains(name));
        match refused {
            Some((name, _)) => Err(ConfigError::invalid(
                format!("{field}.{name}"),
                self.refusal,
            )),
            None => Ok(()),
        }
    }
}

/// `handler`: runs in the embedding program, so takes none of them.
const HANDLER_FIELDS: KindFields = KindFields {
    takes: &[],
    refusal: "a handler target runs in-process and takes no url, secret, ca_file or \
              other setting of a target it connects to",
};

/// `http`: a URL, the secret deliveries are signed with, and TLS roots.
const HTTP_FIELDS: KindFields = KindFields {
    takes: &["url", "secret", "secret_env", "secret_file", "ca_file"],
    refusal: "an http target takes only url, secret (or secret_env, secret_file) and \
              ca_file of the kind-specific fields; this field is another kind's",
};

fn http_destination(
    file: &TargetFile,
    field: &str,
    base_dir: &Path,
) -> Result<HttpDestination, ConfigError> {
    let sub = |name: &str| format!("{field}.{name}");
    let text = file
        .url
        .as_deref()
        .ok_or_else(|| ConfigError::invalid(sub("url"), "an http target needs a url"))?;
    let url: Uri = text
        .parse()
        .map_err(|_| ConfigError::invalid(sub("url"), format!("`{text}` is not a valid URL")))?;
    let https = match url.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => {
            return Err(ConfigError::invalid(
                sub("url"),
                "must be an http:// or https:// URL",
            ))
        }
    };
    if url.host().is_none() {
        return Err(ConfigError::invalid(sub("url"), "the URL has no host"));
    }
    if file.ca_file.is_some() && !https {
        return Err(ConfigError::invalid(
            sub("ca_file"),
            "only https:// targets use a ca_file",
        ));
    }
    let secret = SecretSource::required(
        SecretFields {
            name: "secret",
            inline: file.secret.as_ref(),
            env: file.secret_env.as_deref(),
            file: file.secret_file.as_deref(),
        },
        field,
        base_dir,
    )?;
    Ok(HttpDestination {
        url,
        secret,
        ca_file: file.ca_file.as_ref().map(|ca| base_dir.join(ca)),
        timeout: positive(file.timeout, &sub("timeout"))?,
    })
}

/// `nats`: servers, a subject, and a credentials file.
const NATS_FIELDS: KindFields = KindFields {
    takes: &["url", "subject", "credentials_file"],
    refusal: "a nats target takes only url, subject and credentials_file of the \
              kind-specific fields (its credentials go in credentials_file); this field is \
              another kind's",
};

fn nats_destination(
    file: &TargetFile,
    field: &str,
    base_dir: &Path,
) -> Result<NatsDestination, ConfigError> {
    let sub = |name: &str| format!("{field}.{name}");
    let text = file
        .url
        .as_deref()
        .ok_or_else(|| ConfigError::invalid(sub("url"), "a nats target needs a url"))?;
    let servers = text
        .split(',')
        .map(|url| nats_server(url.trim()).map_err(|why| ConfigError::invalid(sub("url"), why)))
        .collect::<Result<Vec<_>, _>>()?;
    let subject = file
        .subject
        .as_deref()
        .ok_or_else(|| ConfigError::invalid(sub("subject"), "a nats target needs a subject"))?;
    let subject =
        SubjectTemplate::parse(subject).map_err(|why| ConfigError::invalid(sub("subject"), why))?;
    Ok(NatsDestination {
        servers,
        subject,
        credentials_file: file
            .credentials_file
            .as_ref()
            .map(|path| base_dir.join(path)),
        timeout: positive(file.timeout, &sub("timeout"))?,
    })
}

/// `mqtt`: a broker, a topic, the protocol version, a user name and
/// password, and TLS roots for `mqtts://` (built in `config::mqtt_destination`).
const MQTT_FIELDS: KindFields = KindFields {
    takes: &[
        "url",
        "ca_file",
        "topic",
        "protocol",
        "username",
        "password",
        "password_env",
        "password_file",
    ],
    refusal: "an mqtt target takes only url, topic, protocol, username, password (or \
              password_env, password_file) and ca_file of the kind-specific fields",
};

/// One server of a nats target's `url`. Messages never repeat the URL: it
/// might hold a password.
fn nats_server(url: &str) -> Result<ServerAddr, String> {
    const SHAPE: &str = "each server must be a nats://host:port URL (several: separated by commas)";
    if !url.starts_with("nats://") {
        return Err(SHAPE.into());
    }
    let server: ServerAddr = url.parse().map_err(|_| SHAPE.to_owned())?;
    let parsed = server.clone().into_inner();
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "a server URL holds credentials: put them in credentials_file, which is never \
             printed"
                .into(),
        );
    }
    let only_host_and_port = !server.host().is_empty()
        && matches!(parsed.path(), "" | "/")
        && parsed.query().is_none()
        && parsed.fragment().is_none();
    if !only_host_and_port {
        return Err(SHAPE.into());
    }
    Ok(server)
}

/// `[[endpoint.target]]`: where an endpoint's accepted events are delivered.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    /// Unique within the endpoint; recorded on every delivery row.
    pub name: String,
    /// `http`; `nats` (a JetStream publish); `rabbitmq` (an AMQP publish);
    /// `redis_stream` (an `XADD`); `mqtt` (a QoS 1 publish); or `handler` for a program
    /// that embeds hookinbox and registers a handler under this target's
    /// name (`delivery::HandlerRegistry`).
    pub kind: TargetKindName,
    /// Glob patterns the event type must match for this target to get the
    /// event (`["invoice.*"]`; `.` and `/` separate segments, `*` stays
    /// within one, `**` spans several). Absent: every type.
    pub event_types: Option<Vec<String>>,
    /// A CEL expression over `event`, `headers` and `body` that must be
    /// true for this target to get the event (docs/delivery.md, "Routing").
    /// Absent: every event.
    pub filter: Option<String>,
    /// A JavaScript file (relative to the config file) whose
    /// `handler(webhook)` reshapes each delivery before it is sent, in
    /// Svix's shape (docs/delivery.md, "Transformations"). Absent: the
    /// stored body is sent as it is.
    pub transform: Option<PathBuf>,
    /// `"json"`: deliver a form-encoded body as JSON (`Content-Type:
    /// application/json`, signed over the delivered bytes); the stored
    /// body stays as received. Absent or `"as_received"`: as received.
    pub body: Option<DeliveredBody>,
    /// Deliveries are first due this long after the event was accepted
    /// (`"10m"`); ordered objects keep their order. Absent: at once.
    #[serde(default, with = "humantime_serde::option")]
    pub delay: Option<Duration>,
    /// `{ per_second = 50, burst = 10 }`: at most this rate of attempts,
    /// across every worker process. Absent: as fast as the target answers.
    pub rate_limit: Option<TargetRateLimit>,
    /// `{ failures = 5, open_for = "30s" }`: after that many consecutive
    /// transient failures, no attempts for `open_for`, then one probe.
    /// Absent: no breaker.
    pub circuit_breaker: Option<CircuitBreakerSettings>,
    /// `http`: the internal URL the raw body is POSTed to: `http://`, or
    /// `https://` (TLS, certificate and host name always verified).
    /// `nats`: the server, `nats://host:port`; several (one cluster)
    /// separated by commas. `rabbitmq`: `amqp://` or `amqps://` (TLS),
    /// with the vhost as its path (`%2f` is `/`). `redis_stream`:
    /// `redis://host:port/db`.
    /// `mqtt`: the broker, `mqtt://host:port` (1883 by default) or
    /// `mqtts://host:port` (TLS, 8883 by default).
    pub url: Option<String>,
    /// `http`: the Standard Webhooks secret (`whsec_…`) the internal app
    /// verifies with, inline (prefer `secret_env` or `secret_file`).
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub secret: Option<SecretString>,
    /// `http`: the secret from an environment variable.
    pub secret_env: Option<String>,
    /// `http`: the secret from a file (trailing newline trimmed; relative to the config file).
    pub secret_file: Option<PathBuf>,
    /// `https`, `amqps` and `mqtts` URLs: a PEM file of one or more CA certificates (relative to
    /// the config file) that are then the only roots trusted for this
    /// target. Absent: Mozilla's roots.
    pub ca_file: Option<PathBuf>,
    /// `nats`: the subject events are published to; `{endpoint}` and
    /// `{event_type}` in it are each filled in as one subject token.
    pub subject: Option<String>,
    /// `nats`: a NATS credentials file (`.creds`: user JWT and nkey seed;
    /// relative to the config file). Absent: no authentication.
    pub credentials_file: Option<PathBuf>,
    /// `rabbitmq`: the exchange events are published to (`""`: the default
    /// exchange, where the routing key names a queue).
    pub exchange: Option<String>,
    /// `rabbitmq`: the routing key; `{provider}`, `{endpoint}` and
    /// `{event_type}` in it are each filled in as one word.
    pub routing_key: Option<String>,
    /// `redis_stream`: the stream key events are added to, a template like
    /// `routing_key`.
    pub stream: Option<String>,
    /// `redis_stream`: keep the stream near this many entries (`MAXLEN ~`).
    /// Absent: the stream is not trimmed.
    pub maxlen: Option<u64>,
    /// `mqtt`: the topic events are published to; `{provider}`,
    /// `{endpoint}` and `{event_type}` in it are each filled in as one
    /// topic level.
    pub topic: Option<String>,
    /// `mqtt`: the MQTT version, `5` (default: the metadata as user
    /// properties, a refused publish seen in the PUBACK) or `"3.1.1"`.
    pub protocol: Option<MqttProtocol>,
    /// `mqtt`: the user name sent to the broker.
    pub username: Option<String>,
    /// `mqtt`: the password sent with `username`, inline (prefer
    /// `password_env` or `password_file`).
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub password: Option<SecretString>,
    /// `rabbitmq`, `redis_stream`, `mqtt`: the password from an environment
    /// variable, instead of one in the URL.
    pub password_env: Option<String>,
    /// `rabbitmq`, `redis_stream`, `mqtt`: the password from a file (trailing
    /// newline trimmed; relative to the config file).
    pub password_file: Option<PathBuf>,
    /// `http`: how long one attempt may take. `nats`, `rabbitmq`,
    /// `redis_stream`, `mqtt`: how long one attempt waits for the connection and
    /// the broker's acknowledgement (PubAck, confirm, `XADD` reply, PUBACK).
    #[serde(default = "default_target_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// Most attempts before the delivery is dead.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Oldest a delivery may get before it is dead.
    #[serde(default = "default_max_age", with = "humantime_serde")]
    pub max_age: Duration,
    /// Deliveries to this target in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// The first retry waits up to this long; each later one up to twice
    /// the previous bound (full jitter).
    #[serde(default = "default_retry_base", with = "humantime_serde")]
    pub retry_base: Duration,
    /// Longest wait between two attempts.
    #[serde(default = "default_retry_cap", with = "humantime_serde")]
    pub retry_cap: Duration,
}

impl TargetFile {
    /// Each field only some kinds take, in the order the file documents
    /// them, and whether this target sets it. A kind's [`KindFields`] says
    /// which of them it takes.
    fn kind_fields(&self) -> [(&'static str, bool); 17] {
        [
            ("url", self.url.is_some()),
            ("ca_file", self.ca_file.is_some()),
            ("secret", self.secret.is_some()),
            ("secret_env", self.secret_env.is_some()),
            ("secret_file", self.secret_file.is_some()),
            ("subject", self.subject.is_some()),
            ("credentials_file", self.credentials_file.is_some()),
            ("exchange", self.exchange.is_some()),
            ("routing_key", self.routing_key.is_some()),
            ("stream", self.stream.is_some()),
            ("maxlen", self.maxlen.is_some()),
            ("topic", self.topic.is_some()),
            ("protocol", self.protocol.is_some()),
            ("username", self.username.is_some()),
            ("password", self.password.is_some()),
            ("password_env", self.password_env.is_some()),
            ("password_file", self.password_file.is_some()),
        ]
    }
}

/// `target.body`: what a target receives of a form-encoded body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveredBody {
    /// The bytes as the provider sent them.
    #[default]
    AsReceived,
    /// A form-encoded body as JSON: the JSON of its one field holding JSON
    /// (GitHub's and Slack's `payload=`), or else an object of its fields
    /// (`crate::form_body::as_json`). Other bodies are sent as received.
    Json,
}

/// `target.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKindName {
    Http,
    Handler,
    Nats,
    Rabbitmq,
    RedisStream,
    Mqtt,
}

fn default_target_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_max_attempts() -> u32 {
    12
}
fn default_max_age() -> Duration {
    Duration::from_secs(3 * 24 * 3600)
}
fn default_concurrency() -> usize {
    8
}
fn default_retry_base() -> Duration {
    Duration::from_secs(1)
}
fn default_retry_cap() -> Duration {
    Duration::from_secs(3600)
}
