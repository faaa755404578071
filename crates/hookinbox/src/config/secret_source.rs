//! Where a secret value comes from: the config itself, an environment
//! variable or a file. Resolved once at start-up; never logged.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::ConfigError;

/// One `[[endpoint.secret]]` entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretConfig {
    /// The operator's name for this version; recorded with every event it verifies.
    pub version: String,
    /// The secret itself (development only: prefer `value_env` or `value_file`).
    pub value: Option<String>,
    /// The name of an environment variable holding the secret.
    pub value_env: Option<String>,
    /// A file holding the secret (trailing newline trimmed); relative to the config file.
    pub value_file: Option<PathBuf>,
    /// Trusted from this unix second on.
    pub not_before: Option<i64>,
    /// Retired after this unix second.
    pub not_after: Option<i64>,
}

impl std::fmt::Debug for SecretConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretConfig")
            .field("version", &self.version)
            .field("value", &self.value.as_ref().map(|_| "[redacted]"))
            .field("value_env", &self.value_env)
            .field("value_file", &self.value_file)
            .field("not_before", &self.not_before)
            .field("not_after", &self.not_after)
            .finish()
    }
}

impl SecretConfig {
    /// Reads the secret from its one source. `field` names this entry in errors.
    pub fn resolve(&self, base_dir: &Path, field: &str) -> Result<String, ConfigError> {
        if self.version.trim().is_empty() {
            return Err(ConfigError::invalid(
                format!("{field}.version"),
                "must not be empty",
            ));
        }
        let value = resolve_one(
            self.value.as_deref(),
            self.value_env.as_deref(),
            self.value_file.as_deref(),
            base_dir,
            field,
            ("value", "value_env", "value_file"),
        )?;
        if let (Some(start), Some(end)) = (self.not_before, self.not_after) {
            if start > end {
                return Err(ConfigError::invalid(field, "not_before is after not_after"));
            }
        }
        Ok(value)
    }
}

/// Reads a secret from exactly one of an inline value, an environment
/// variable or a file; `names` are the three field names for messages.
pub fn resolve_one(
    value: Option<&str>,
    value_env: Option<&str>,
    value_file: Option<&Path>,
    base_dir: &Path,
    field: &str,
    names: (&str, &str, &str),
) -> Result<String, ConfigError> {
    let (value_name, env_name, file_name) = names;
    let value = match (value, value_env, value_file) {
        (Some(value), None, None) => value.to_owned(),
        (None, Some(name), None) => std::env::var(name).map_err(|_| {
            ConfigError::invalid(
                format!("{field}.{env_name}"),
                format!("environment variable `{name}` is not set or not UTF-8"),
            )
        })?,
        (None, None, Some(file)) => {
            let path = base_dir.join(file);
            std::fs::read_to_string(&path)
                .map_err(|e| {
                    ConfigError::invalid(
                        format!("{field}.{file_name}"),
                        format!("cannot read {}: {e}", path.display()),
                    )
                })?
                .trim_end_matches(['\n', '\r'])
                .to_owned()
        }
        _ => {
            return Err(ConfigError::invalid(
                field,
                format!("exactly one of `{value_name}`, `{env_name}` or `{file_name}` is required"),
            ))
        }
    };
    if value.trim().is_empty() {
        return Err(ConfigError::invalid(field, "the secret is empty"));
    }
    Ok(value)
}
