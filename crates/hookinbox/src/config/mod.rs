//! The TOML configuration (`hookinbox serve --config FILE`), validated at
//! start-up with messages that name the offending field.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::secret_source::SecretConfig;

/// The whole configuration file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default)]
    pub storage: StorageConfig,
    #[serde(default)]
    pub delivery: DeliveryConfig,
    /// The admin listener (`/metrics`, `/readyz`); off unless configured.
    pub admin: Option<AdminConfig>,
    /// The webhook endpoints, each served at `/hooks/{id}`.
    #[serde(rename = "endpoint", default)]
    pub endpoints: Vec<EndpointConfig>,
    /// The directory of the configuration file: relative paths in it
    /// (SQLite file, secret files) are resolved against it.
    #[serde(skip)]
    pub base_dir: PathBuf,
}

/// The public listener.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address of the public listener (serves `/hooks/*` and `/healthz`).
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Most header fields one request may carry; more is refused by the HTTP layer.
    #[serde(default = "default_max_headers")]
    pub max_headers: usize,
    /// Most bytes of the request head (request line and headers).
    #[serde(default = "default_max_header_bytes")]
    pub max_header_bytes: usize,
    /// Time allowed to receive the request head, in milliseconds; also how
    /// long an idle keep-alive connection is kept open.
    #[serde(default = "default_header_read_timeout_ms")]
    pub header_read_timeout_ms: u64,
    /// Time allowed to receive the whole body, however fast it comes, in milliseconds.
    #[serde(default = "default_body_read_timeout_ms")]
    pub body_read_timeout_ms: u64,
    /// Time a body may take before `min_body_bytes_per_second` applies, in milliseconds.
    #[serde(default = "default_body_rate_grace_ms")]
    pub body_rate_grace_ms: u64,
    /// Average rate a body must keep up after the grace period; slower ones
    /// end in 408 `timeout`.
    #[serde(default = "default_min_body_bytes_per_second")]
    pub min_body_bytes_per_second: u64,
    /// Bytes of request bodies held in memory at once, across all requests
    /// (buffers are claimed as bytes arrive); past it requests get 503.
    #[serde(default = "default_max_inflight_body_bytes")]
    pub max_inflight_body_bytes: usize,
    /// Connections open at once on the public listener. Start-up raises the
    /// open-file limit to its hard limit and lowers this (with a warning) if
    /// the limit cannot hold it.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Connections the kernel queues while the listener is at its cap.
    #[serde(default = "default_listen_backlog")]
    pub listen_backlog: u32,
    /// Requests served on one keep-alive connection before it is closed.
    #[serde(default = "default_max_requests_per_connection")]
    pub max_requests_per_connection: u32,
    /// After answering before the body was read (413, 404, 429, …): how
    /// long the rest of the body is read and discarded, in milliseconds, so
    /// a client that writes before it reads still gets the answer.
    #[serde(default = "default_linger_timeout_ms")]
    pub linger_timeout_ms: u64,
    /// …and at most how many bytes of it.
    #[serde(default = "default_linger_max_bytes")]
    pub linger_max_bytes: u64,
    /// Proxies (addresses or CIDR ranges) whose `X-Forwarded-For` names the
    /// client, for the per-client limit. Empty: the peer is the client.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// Per-client limit on requests refused before or at verification; once
    /// spent the client gets 429 before its body is read. Verified requests
    /// never spend it.
    #[serde(default = "default_unverified_rate_limit")]
    pub unverified_rate_limit: RateLimitConfig,
    /// How long in-flight requests may take to finish at shutdown, in milliseconds.
    #[serde(default = "default_shutdown_grace_ms")]
    pub shutdown_grace_ms: u64,
    /// TLS on the public listener, for deployments without a terminating proxy.
    pub tls: Option<TlsConfig>,
}

/// `[server.tls]`: the certificate the public listener presents. Reloaded
/// on SIGHUP; new handshakes use the new files, open connections keep theirs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM file of the certificate chain, leaf first (relative to the config file).
    pub cert_file: PathBuf,
    /// PEM file of the private key: PKCS#8, PKCS#1 or SEC1 (relative to the config file).
    pub key_file: PathBuf,
    /// Time allowed for a TLS handshake, in milliseconds: a client that
    /// opens a connection and then stalls the handshake is a slow-loris too.
    #[serde(default = "default_tls_handshake_timeout_ms")]
    pub handshake_timeout_ms: u64,
}

fn default_tls_handshake_timeout_ms() -> u64 {
    10_000
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8080))
}
fn default_max_headers() -> usize {
    64
}
fn default_max_header_bytes() -> usize {
    16 * 1024
}
fn default_header_read_timeout_ms() -> u64 {
    10_000
}
fn default_body_read_timeout_ms() -> u64 {
    30_000
}
fn default_body_rate_grace_ms() -> u64 {
    2_000
}
fn default_min_body_bytes_per_second() -> u64 {
    16 * 1024
}
fn default_max_inflight_body_bytes() -> usize {
    128 * 1024 * 1024
}
fn default_max_connections() -> usize {
    10_000
}
fn default_listen_backlog() -> u32 {
    4_096
}
fn default_max_requests_per_connection() -> u32 {
    1_000
}
fn default_linger_timeout_ms() -> u64 {
    5_000
}
fn default_linger_max_bytes() -> u64 {
    16 * 1024 * 1024
}
fn default_unverified_rate_limit() -> RateLimitConfig {
    RateLimitConfig {
        per_second: 20,
        burst: Some(200),
    }
}
fn default_shutdown_grace_ms() -> u64 {
    10_000
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: default_listen(),
            max_headers: default_max_headers(),
            max_header_bytes: default_max_header_bytes(),
            header_read_timeout_ms: default_header_read_timeout_ms(),
            body_read_timeout_ms: default_body_read_timeout_ms(),
            body_rate_grace_ms: default_body_rate_grace_ms(),
            min_body_bytes_per_second: default_min_body_bytes_per_second(),
            max_inflight_body_bytes: default_max_inflight_body_bytes(),
            max_connections: default_max_connections(),
            listen_backlog: default_listen_backlog(),
            max_requests_per_connection: default_max_requests_per_connection(),
            linger_timeout_ms: default_linger_timeout_ms(),
            linger_max_bytes: default_linger_max_bytes(),
            trusted_proxies: Vec::new(),
            unverified_rate_limit: default_unverified_rate_limit(),
            shutdown_grace_ms: default_shutdown_grace_ms(),
            tls: None,
        }
    }
}

impl ServerConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("server.max_connections", self.max_connections as u64),
            (
                "server.max_inflight_body_bytes",
                self.max_inflight_body_bytes as u64,
            ),
            (
                "server.min_body_bytes_per_second",
                self.min_body_bytes_per_second,
            ),
            (
                "server.max_requests_per_connection",
                u64::from(self.max_requests_per_connection),
            ),
            ("server.listen_backlog", u64::from(self.listen_backlog)),
            ("server.header_read_timeout_ms", self.header_read_timeout_ms),
            ("server.body_read_timeout_ms", self.body_read_timeout_ms),
        ];
        if let Some((field, _)) = positive.iter().find(|(_, value)| *value == 0) {
            return Err(ConfigError::invalid(*field, "must be positive"));
        }
        if self.max_inflight_body_bytes > u32::MAX as usize {
            return Err(ConfigError::invalid(
                "server.max_inflight_body_bytes",
                "must be at most 4 GiB",
            ));
        }
        let rate = &self.unverified_rate_limit;
        if rate.per_second == 0 || rate.burst == Some(0) {
            return Err(ConfigError::invalid(
                "server.unverified_rate_limit",
                "per_second and burst must be positive",
            ));
        }
        crate::ingress::client_address::TrustedProxies::parse(&self.trusted_proxies)
            .map_err(|error| ConfigError::invalid("server.trusted_proxies", error.to_string()))?;
        Ok(())
    }
}

/// The admin listener: metrics and readiness, kept off the public port.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// Address of the admin listener; keep it on loopback or a private network.
    pub listen: SocketAddr,
    /// A bearer token required on every admin request (inline; prefer `token_env`).
    pub token: Option<String>,
    /// The bearer token from an environment variable.
    pub token_env: Option<String>,
    /// `Host` header values admitted besides an IP address or `localhost`
    /// with the listen port (the DNS rebinding guard), exactly as clients
    /// send them: `"admin.internal:9090"`, or a bare name behind a proxy on
    /// the default port.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Time for a request head to arrive, in milliseconds; an idle
    /// keep-alive connection is closed after it too.
    #[serde(default = "default_admin_header_read_timeout_ms")]
    pub header_read_timeout_ms: u64,
    /// Admin connections open at once; further ones wait until one closes.
    #[serde(default = "default_admin_max_connections")]
    pub max_connections: usize,
}

fn default_admin_header_read_timeout_ms() -> u64 {
    5_000
}
fn default_admin_max_connections() -> usize {
    16
}

/// Delivery workers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryConfig {
    /// How long a worker holds a leased delivery before another may take it,
    /// in milliseconds; at least twice a target's timeout is used. Workers
    /// heartbeat at a third of it.
    #[serde(default = "default_lease_ms")]
    pub lease_ms: u64,
    /// How often idle workers look for due deliveries when nothing wakes
    /// them (events accepted by another process, retries coming due), in milliseconds.
    #[serde(default = "default_poll_ms")]
    pub poll_ms: u64,
    /// How often expired leases are returned to PENDING, in milliseconds.
    #[serde(default = "default_rescue_interval_ms")]
    pub rescue_interval_ms: u64,
}

fn default_lease_ms() -> u64 {
    30_000
}
fn default_poll_ms() -> u64 {
    250
}
fn default_rescue_interval_ms() -> u64 {
    5_000
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            lease_ms: default_lease_ms(),
            poll_ms: default_poll_ms(),
            rescue_interval_ms: default_rescue_interval_ms(),
        }
    }
}

/// Where events are stored.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// `sqlite://PATH` (created if missing; relative to this file's directory).
    #[serde(default = "default_storage_url")]
    pub url: String,
    /// How long a commit waits for a database lock before answering 503, in milliseconds.
    #[serde(default = "default_busy_timeout_ms")]
    pub busy_timeout_ms: u64,
    /// Requests that may wait for a commit at once; beyond it requests get 503.
    #[serde(default = "default_queue_capacity")]
    pub queue_capacity: usize,
    /// Most events committed in one transaction.
    #[serde(default = "default_max_batch_events")]
    pub max_batch_events: usize,
    /// Longest a request waits for its commit (queue included), as a
    /// duration (`"2s"`, `"500ms"`). Past it the answer is 503 + `Retry-After`:
    /// the outcome is unknown, and the provider's retry is deduplicated. A
    /// frozen or very slow disk then looks to providers like an outage they
    /// retry, not like a timeout of their own.
    #[serde(default = "default_commit_timeout", with = "humantime_serde")]
    pub commit_timeout: Duration,
}

fn default_storage_url() -> String {
    "sqlite://hookinbox.db".into()
}
fn default_busy_timeout_ms() -> u64 {
    2_000
}
fn default_queue_capacity() -> usize {
    4_096
}
fn default_max_batch_events() -> usize {
    512
}
fn default_commit_timeout() -> Duration {
    Duration::from_secs(2)
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            url: default_storage_url(),
            busy_timeout_ms: default_busy_timeout_ms(),
            queue_capacity: default_queue_capacity(),
            max_batch_events: default_max_batch_events(),
            commit_timeout: default_commit_timeout(),
        }
    }
}

/// One webhook endpoint: a URL, a provider scheme and its key ring.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    /// The path segment: the endpoint is served at `/hooks/{id}`.
    pub id: String,
    /// The provider scheme (`stripe`, `github`, `lab`, …).
    pub provider: String,
    /// Timestamp tolerance in seconds; the provider's default when absent.
    pub tolerance_seconds: Option<u64>,
    /// Largest accepted body in bytes.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// The public URL the provider was given, for schemes that sign the URL.
    pub public_url: Option<String>,
    /// Accepted media types; `"*"` accepts any. Default: JSON (also `+json`)
    /// and form-encoded bodies.
    pub content_types: Option<Vec<String>>,
    /// Event types to store; others are acknowledged and ignored. A trailing
    /// `*` matches a prefix. Absent: every type is stored.
    pub event_types: Option<Vec<String>>,
    /// Per-endpoint request rate limit.
    pub rate_limit: Option<RateLimitConfig>,
    /// The key ring: every version trusted now (current and previous during a rotation).
    #[serde(rename = "secret", default)]
    pub secrets: Vec<SecretConfig>,
    /// The scheme of a `provider = "generic_hmac"` endpoint.
    pub generic_hmac: Option<hookinbox_verify::providers::generic_hmac::GenericHmacSettings>,
    /// HTTP basic auth required on every request, besides the signature;
    /// required for providers whose signature does not cover the body (Mailgun).
    pub basic_auth: Option<crate::basic_auth::BasicAuthConfig>,
    /// JSON pointer to the object id in the body, for per-object ordering
    /// (overrides what the provider adapter reads).
    pub object_id: Option<String>,
    /// JSON pointer to a version of that object that only grows (an integer,
    /// or a string of digits); required with `object_id` for ordering.
    pub object_version: Option<String>,
    /// Where accepted events are delivered; one delivery row per target per event.
    #[serde(rename = "target", default)]
    pub targets: Vec<TargetConfig>,
}

/// One delivery target of an endpoint.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    /// Unique within the endpoint; recorded on every delivery row.
    pub name: String,
    /// The kind of target: `http`, or `handler` for a program that embeds
    /// hookinbox and registers a handler under this target's name
    /// (`delivery::HandlerRegistry`).
    pub kind: TargetKind,
    /// `http`: the internal URL the raw body is POSTed to: `http://`, or
    /// `https://` (TLS, certificate and host name always verified).
    pub url: Option<String>,
    /// `https` URLs: a PEM file of one or more CA certificates (relative to
    /// the config file) that are then the only roots trusted for this
    /// target, for services under an internal CA. Absent: Mozilla's roots.
    pub ca_file: Option<PathBuf>,
    /// `http`: per-attempt timeout in milliseconds.
    #[serde(default = "default_target_timeout_ms")]
    pub timeout_ms: u64,
    /// Most attempts before the delivery is dead.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Oldest a delivery may get before it is dead (`"3d"`, `"12h"`, `"30m"`, `"45s"`).
    #[serde(default = "default_max_age")]
    pub max_age: String,
    /// Deliveries to this target in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// First retry delay cap in milliseconds; the cap doubles per attempt (full jitter).
    #[serde(default = "default_retry_base_ms")]
    pub retry_base_ms: u64,
    /// Largest delay between two attempts, in milliseconds.
    #[serde(default = "default_retry_cap_ms")]
    pub retry_cap_ms: u64,
    /// `http`: the Standard Webhooks secret (`whsec_…`) the internal app verifies with.
    pub secret: Option<String>,
    /// `http`: the secret from an environment variable.
    pub secret_env: Option<String>,
    /// `http`: the secret from a file (relative to the config file).
    pub secret_file: Option<PathBuf>,
}

/// What kind of system a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// POST to a URL (`http_target`).
    Http,
    /// A library handler, run by the workers in the transaction that marks
    /// the delivery DELIVERED (`handler_target`).
    Handler,
}

fn default_target_timeout_ms() -> u64 {
    5_000
}
fn default_max_attempts() -> u32 {
    12
}
fn default_max_age() -> String {
    "3d".into()
}
fn default_concurrency() -> usize {
    8
}
fn default_retry_base_ms() -> u64 {
    1_000
}
fn default_retry_cap_ms() -> u64 {
    3_600_000
}

/// Parses `"3d"`, `"12h"`, `"30m"`, `"45s"`, `"500ms"` into milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let factor = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    number.checked_mul(factor).filter(|ms| *ms > 0)
}

fn default_max_body_bytes() -> usize {
    1024 * 1024
}

/// A token bucket per endpoint.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Sustained requests per second.
    pub per_second: u32,
    /// Requests allowed in a burst above the sustained rate; defaults to `per_second`.
    pub burst: Option<u32>,
}

/// A configuration that cannot be used. Messages name the field and never
/// include a secret value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
}

impl ConfigError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl Config {
    /// Reads and parses a configuration file, then checks what parsing cannot.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let base_dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_owned)
            .unwrap_or_else(|| PathBuf::from("."));
        Config::parse(&text, base_dir).map_err(|error| match error {
            ConfigError::Parse { message, .. } => ConfigError::Parse {
                path: path.to_owned(),
                message,
            },
            other => other,
        })
    }

    /// Parses configuration text. Parse errors report the position and the
    /// parser's message, never the source line (it could hold a secret).
    pub fn parse(text: &str, base_dir: PathBuf) -> Result<Config, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|error| {
            let position = error
                .span()
                .map(|span| {
                    let line = text[..span.start.min(text.len())].lines().count().max(1);
                    format!("line {line}: ")
                })
                .unwrap_or_default();
            ConfigError::Parse {
                path: PathBuf::from("<config>"),
                message: format!("{position}{}", error.message()),
            }
        })?;
        config.base_dir = base_dir;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.endpoints.is_empty() {
            return Err(ConfigError::invalid(
                "endpoint",
                "at least one [[endpoint]] is required",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (index, endpoint) in self.endpoints.iter().enumerate() {
            let field = |name: &str| format!("endpoint[{index}].{name}");
            let id_ok = !endpoint.id.is_empty()
                && endpoint.id.len() <= 64
                && endpoint
                    .id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
            if !id_ok {
                return Err(ConfigError::invalid(
                    field("id"),
                    "must be 1–64 characters of letters, digits, `-`, `_` or `.`",
                ));
            }
            if !seen.insert(endpoint.id.as_str()) {
                return Err(ConfigError::invalid(
                    field("id"),
                    format!("`{}` is used by two endpoints", endpoint.id),
                ));
            }
            if endpoint.max_body_bytes == 0 || endpoint.max_body_bytes > 64 * 1024 * 1024 {
                return Err(ConfigError::invalid(
                    field("max_body_bytes"),
                    "must be between 1 and 64 MiB",
                ));
            }
            if endpoint.secrets.is_empty() {
                return Err(ConfigError::invalid(
                    field("secret"),
                    "at least one [[endpoint.secret]] is required",
                ));
            }
            if endpoint.object_id.is_some() != endpoint.object_version.is_some() {
                return Err(ConfigError::invalid(
                    field("object_id"),
                    "`object_id` and `object_version` go together: ordering needs both",
                ));
            }
            let mut names = std::collections::HashSet::new();
            for (t, target) in endpoint.targets.iter().enumerate() {
                let target_field = |name: &str| format!("endpoint[{index}].target[{t}].{name}");
                if target.name.is_empty() || !names.insert(target.name.as_str()) {
                    return Err(ConfigError::invalid(
                        target_field("name"),
                        "must be non-empty and unique within the endpoint",
                    ));
                }
                if parse_duration_ms(&target.max_age).is_none() {
                    return Err(ConfigError::invalid(
                        target_field("max_age"),
                        "expected a duration such as \"3d\", \"12h\" or \"30m\"",
                    ));
                }
                if target.max_attempts == 0 || target.concurrency == 0 || target.timeout_ms == 0 {
                    return Err(ConfigError::invalid(
                        target_field("max_attempts"),
                        "max_attempts, concurrency and timeout_ms must be positive",
                    ));
                }
                if target.kind == TargetKind::Handler {
                    let set = [
                        ("url", target.url.is_some()),
                        ("ca_file", target.ca_file.is_some()),
                        ("secret", target.secret.is_some()),
                        ("secret_env", target.secret_env.is_some()),
                        ("secret_file", target.secret_file.is_some()),
                    ];
                    if let Some((name, _)) = set.iter().find(|(_, is_set)| *is_set) {
                        return Err(ConfigError::invalid(
                            target_field(name),
                            "a handler target runs in-process and takes no url, secret or ca_file",
                        ));
                    }
                    continue;
                }
                let https = match target.url.as_deref() {
                    Some(url) if url.starts_with("http://") => false,
                    Some(url) if url.starts_with("https://") => true,
                    Some(_) => {
                        return Err(ConfigError::invalid(
                            target_field("url"),
                            "must be an http:// or https:// URL",
                        ))
                    }
                    None => {
                        return Err(ConfigError::invalid(
                            target_field("url"),
                            "an http target needs a url",
                        ))
                    }
                };
                if target.ca_file.is_some() && !https {
                    return Err(ConfigError::invalid(
                        target_field("ca_file"),
                        "only https:// targets use a ca_file",
                    ));
                }
            }
            if let Some(rate) = &endpoint.rate_limit {
                if rate.per_second == 0 || rate.burst == Some(0) {
                    return Err(ConfigError::invalid(
                        field("rate_limit"),
                        "per_second and burst must be positive",
                    ));
                }
            }
        }
        self.server.validate()?;
        if self.storage.queue_capacity == 0 || self.storage.max_batch_events == 0 {
            return Err(ConfigError::invalid(
                "storage",
                "queue_capacity and max_batch_events must be positive",
            ));
        }
        if self.storage.commit_timeout.is_zero() {
            return Err(ConfigError::invalid(
                "storage.commit_timeout",
                "must be longer than zero (it would refuse every event)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, PathBuf::from("/etc/hookinbox"))
    }

    const MINIMAL: &str = r#"
        [[endpoint]]
        id = "stripe"
        provider = "stripe"
        [[endpoint.secret]]
        version = "1"
        value = "whsec_x"
    "#;

    #[test]
    fn minimal_config_takes_defaults() {
        let config = parse(MINIMAL).unwrap();
        assert_eq!(config.server.listen, default_listen());
        assert_eq!(config.storage.url, "sqlite://hookinbox.db");
        assert_eq!(config.endpoints[0].max_body_bytes, 1024 * 1024);
    }

    #[test]
    fn unknown_fields_are_refused_with_their_name() {
        let err = parse(&MINIMAL.replace(
            "provider = \"stripe\"",
            "provider = \"stripe\"\nprovidr = 1",
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("providr"), "{err}");
    }

    #[test]
    fn parse_errors_do_not_echo_the_secret_line() {
        let err = parse(&MINIMAL.replace("value = \"whsec_x\"", "value = \"whsec_leak"))
            .unwrap_err()
            .to_string();
        assert!(!err.contains("whsec_leak"), "{err}");
        assert!(err.contains("line"), "{err}");
    }

    #[test]
    fn endpoint_without_secret_names_the_field() {
        let err = parse("[[endpoint]]\nid = \"a\"\nprovider = \"lab\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("endpoint[0].secret"), "{err}");
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration_ms("3d"), Some(259_200_000));
        assert_eq!(parse_duration_ms("45s"), Some(45_000));
        assert_eq!(parse_duration_ms("500ms"), Some(500));
        assert_eq!(parse_duration_ms("3 days"), None);
        assert_eq!(parse_duration_ms("0s"), None);
    }

    #[test]
    fn commit_timeout_is_a_duration_with_a_2_s_default() {
        assert_eq!(
            parse(MINIMAL).unwrap().storage.commit_timeout,
            Duration::from_secs(2)
        );
        let with = |value: &str| format!("[storage]\ncommit_timeout = {value}\n{MINIMAL}");
        assert_eq!(
            parse(&with("\"300ms\"")).unwrap().storage.commit_timeout,
            Duration::from_millis(300)
        );
        let zero = parse(&with("\"0s\"")).unwrap_err().to_string();
        assert!(zero.contains("storage.commit_timeout"), "{zero}");
        let bad = parse(&with("\"soon\"")).unwrap_err().to_string();
        // Parse errors point at the line (the field's), with serde's reason.
        assert!(
            bad.contains("line 2") && bad.contains("expected a duration"),
            "{bad}"
        );
    }

    #[test]
    fn targets_are_checked() {
        let with_target = |target: &str| format!("{MINIMAL}\n[[endpoint.target]]\n{target}\n");
        let ok = with_target("name = \"billing\"\nkind = \"http\"\nurl = \"http://127.0.0.1:9/x\"\nsecret = \"whsec_AAAA\"");
        assert_eq!(parse(&ok).unwrap().endpoints[0].targets[0].max_attempts, 12);
        let bad_age = with_target(
            "name = \"b\"\nkind = \"http\"\nurl = \"http://h/x\"\nmax_age = \"forever\"",
        );
        assert!(parse(&bad_age)
            .unwrap_err()
            .to_string()
            .contains("endpoint[0].target[0].max_age"));
        let tls = with_target("name = \"b\"\nkind = \"http\"\nurl = \"https://billing.internal/x\"\nca_file = \"ca.pem\"");
        assert!(parse(&tls).is_ok());
        let ftp = with_target("name = \"b\"\nkind = \"http\"\nurl = \"ftp://h/x\"");
        assert!(parse(&ftp)
            .unwrap_err()
            .to_string()
            .contains("endpoint[0].target[0].url"));
        let plain_with_ca = with_target(
            "name = \"b\"\nkind = \"http\"\nurl = \"http://h/x\"\nca_file = \"ca.pem\"",
        );
        assert!(parse(&plain_with_ca)
            .unwrap_err()
            .to_string()
            .contains("endpoint[0].target[0].ca_file"));
        let no_url = with_target("name = \"b\"\nkind = \"http\"");
        assert!(parse(&no_url)
            .unwrap_err()
            .to_string()
            .contains("endpoint[0].target[0].url"));
        let handler = with_target("name = \"ledger\"\nkind = \"handler\"");
        assert!(parse(&handler).is_ok());
        let handler_with_secret =
            with_target("name = \"ledger\"\nkind = \"handler\"\nsecret = \"whsec_AAAA\"");
        assert!(parse(&handler_with_secret)
            .unwrap_err()
            .to_string()
            .contains("endpoint[0].target[0].secret"));
    }

    #[test]
    fn duplicate_and_bad_ids_are_refused() {
        let twice = format!("{MINIMAL}{MINIMAL}");
        assert!(parse(&twice)
            .unwrap_err()
            .to_string()
            .contains("endpoint[1].id"));
        let bad = MINIMAL.replace("id = \"stripe\"", "id = \"a/b\"");
        assert!(parse(&bad)
            .unwrap_err()
            .to_string()
            .contains("endpoint[0].id"));
    }
}
