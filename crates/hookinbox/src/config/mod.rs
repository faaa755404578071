//! The configuration (`--config FILE`): one path from text to settings.
//!
//! 1. **Parse** ([`file`]): serde reads the TOML into structs that are the
//!    file's exact shape — unknown fields refused, defaults filled in,
//!    durations as humantime strings (`"30s"`).
//! 2. **Check** ([`Settings`]): every rule is applied once, here, and the
//!    result is held in types that cannot be wrong (`NonZero*`, `Duration`,
//!    a parsed `Uri`, one [`SecretSource`] for every secret). Errors name the
//!    field as the file spells it (`endpoint[2].target[0].timeout`) and never
//!    include a secret.
//! 3. **Build**: endpoints, targets, the admin listener and the store are
//!    made from the settings by their own modules, which read secrets and
//!    certificate files but check nothing the settings already guarantee.

mod admin;
mod checks;
mod endpoint;
mod error;
mod file;
mod renamed_fields;
mod secret_source;
mod server;
mod settings;
mod storage;
mod target;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use admin::Admin;
pub use endpoint::{BasicAuth, Endpoint, ObjectOrdering, SecretVersion};
pub use error::ConfigError;
pub use secret_source::{SecretSource, SecretValue};
pub use server::{RateLimit, Server, Tls};
pub use settings::Settings;
pub use storage::{Delivery, Storage};
pub use target::{HttpDestination, Target, TargetKind};

/// Reads, parses and checks a configuration file. Relative paths in it
/// (the database, secret and certificate files) are resolved against the
/// file's directory.
pub fn load(path: &Path) -> Result<Settings, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
        path: path.to_owned(),
        error,
    })?;
    let base_dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_owned)
        .unwrap_or_else(|| PathBuf::from("."));
    parse(&text, &base_dir).map_err(|error| match error {
        ConfigError::Parse { message, .. } => ConfigError::Parse {
            path: path.to_owned(),
            message,
        },
        other => other,
    })
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
