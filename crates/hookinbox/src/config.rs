//! The TOML configuration (`hookinbox serve --config FILE`), validated at
//! start-up with messages that name the offending field.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

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
    /// Time allowed to receive the request head, in milliseconds.
    #[serde(default = "default_header_read_timeout_ms")]
    pub header_read_timeout_ms: u64,
    /// Time allowed to receive the whole body, in milliseconds.
    #[serde(default = "default_body_read_timeout_ms")]
    pub body_read_timeout_ms: u64,
    /// How long in-flight requests may take to finish at shutdown, in milliseconds.
    #[serde(default = "default_shutdown_grace_ms")]
    pub shutdown_grace_ms: u64,
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
            shutdown_grace_ms: default_shutdown_grace_ms(),
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

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            url: default_storage_url(),
            busy_timeout_ms: default_busy_timeout_ms(),
            queue_capacity: default_queue_capacity(),
            max_batch_events: default_max_batch_events(),
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
            if let Some(rate) = &endpoint.rate_limit {
                if rate.per_second == 0 || rate.burst == Some(0) {
                    return Err(ConfigError::invalid(
                        field("rate_limit"),
                        "per_second and burst must be positive",
                    ));
                }
            }
        }
        if self.storage.queue_capacity == 0 || self.storage.max_batch_events == 0 {
            return Err(ConfigError::invalid(
                "storage",
                "queue_capacity and max_batch_events must be positive",
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
