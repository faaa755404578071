//! The configuration (`--config FILE`): one path from text to settings.
//!
//! 1. **Parse** ([`file`]): serde reads the TOML into structs that are the
//!    file's exact shape — unknown fields refused, defaults filled in,
//!    durations as humantime strings (`"30s"`). Each section's struct sits
//!    beside its checked type (`StorageFile` beside [`Storage`]).
//! 2. **Check** ([`Settings`]): every rule is applied once, here, and the
//!    result is held in types that cannot be wrong (`NonZero*`, `Duration`,
//!    a parsed `Uri`, one [`SecretSource`] for every secret). Errors name the
//!    field as the file spells it (`endpoint[2].target[0].timeout`) and never
//!    include a secret.
//! 3. **Build**: endpoints, targets, the admin listener and the store are
//!    made from the settings by their own modules, which read secrets and
//!    certificate files but check nothing the settings already guarantee.
//!
//! [`EXAMPLE`] is a complete, commented configuration (`hookinbox config
//! example`); `reference_tests` hold it, the `*File` structs and the
//! reference in docs/configuration.md to the same fields.

mod admin;
mod checks;
mod encryption;
mod endpoint;
mod error;
mod file;
mod flow_control;
mod inline_secret;
mod metrics;
mod mqtt_destination;
mod mqtt_topic;
mod name_template;
mod nats_subject;
mod placeholder_template;
mod plaid_api;
mod printable;
mod rabbitmq_target;
mod reconcile;
mod redis_stream_target;
mod renamed_fields;
mod retention;
mod secret_source;
mod server;
mod settings;
mod storage;
mod target;
mod telemetry;

#[cfg(test)]
mod broker_target_tests;
#[cfg(test)]
mod key_fetch_tests;
#[cfg(test)]
mod redaction_tests;
#[cfg(test)]
mod reference_tests;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use admin::Admin;
pub use encryption::{Encryption, EncryptionKey};
pub use endpoint::{BasicAuth, Endpoint, ObjectOrdering, SecretVersion};
pub use error::ConfigError;
pub use flow_control::{CircuitBreakerSettings, FlowControl, TargetRateLimit};
pub use metrics::Metrics;
pub use mqtt_destination::{MqttBroker, MqttDestination, MqttProtocol};
pub use mqtt_topic::TopicTemplate;
pub use name_template::NameTemplate;
pub use nats_subject::SubjectTemplate;
pub use placeholder_template::TemplateValues;
pub use printable::printable;
pub use rabbitmq_target::RabbitmqDestination;
pub use reconcile::{EndpointReconcile, Reconcile};
pub use redis_stream_target::RedisStreamDestination;
pub use retention::Retention;
pub use secret_source::SecretSource;
pub use server::{RateLimit, Server, Tls};
pub use settings::Settings;
pub use storage::{Database, Delivery, PostgresDatabase, Storage};
pub use target::{DeliveredBody, HttpDestination, NatsDestination, Target, TargetKind};
pub use telemetry::{Otlp, OtlpProtocol, Telemetry};

/// A complete configuration with every field, its default and what it is
/// for: what `hookinbox config example` prints.
pub const EXAMPLE: &str = include_str!("example.toml");

/// Reads, parses and checks a configuration file. Relative paths in it
/// (the database, secret and certificate files) are resolved against the
/// file's directory, made absolute.
pub fn load(path: &Path) -> Result<Settings, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
        path: path.to_owned(),
        error,
    })?;
    parse(&text, &base_dir(path)).map_err(|error| match error {
        ConfigError::Parse { message, .. } => ConfigError::Parse {
            path: path.to_owned(),
            message,
        },
        other => other,
    })
}

/// The directory relative paths in the file at `path` are taken from:
/// absolute, so logs and `config check` say where files really are.
pub fn base_dir(path: &Path) -> PathBuf {
    let base_dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::path::absolute(base_dir).unwrap_or_else(|_| base_dir.to_owned())
}

/// Parses and checks configuration text. Parse errors give the line and the
/// parser's reason, never the line itself (it could hold a secret).
pub fn parse(text: &str, base_dir: &Path) -> Result<Settings, ConfigError> {
    let file: file::ConfigFile = toml::from_str(text).map_err(|error| {
        let position = error
            .span()
            .map(|span| {
                let before = &text.as_bytes()[..span.start.min(text.len())];
                let line = before.iter().filter(|b| **b == b'\n').count() + 1;
                format!("line {line}: ")
            })
            .unwrap_or_default();
        let message = renamed_fields::hint(error.message())
            .unwrap_or_else(|| error.message().trim_end().to_owned());
        ConfigError::Parse {
            path: PathBuf::from("<config>"),
            message: format!("{position}{message}"),
        }
    })?;
    Settings::from_file(file, base_dir)
}
