//! `[endpoint.plaid]`: the Plaid API credentials a `plaid` endpoint fetches
//! its verification keys with (`/webhook_verification_key/get`, docs/architecture.md §3).

use std::path::{Path, PathBuf};

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::secret_source::{SecretFields, SecretSource};
use super::ConfigError;

/// Which Plaid API serves the keys: the one the webhooks come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlaidEnvironment {
    /// `production.plaid.com`.
    Production,
    /// `sandbox.plaid.com`.
    Sandbox,
}

impl PlaidEnvironment {
    /// The API host of the environment (the only hosts keys are fetched from).
    pub fn host(self) -> &'static str {
        match self {
            PlaidEnvironment::Production => "production.plaid.com",
            PlaidEnvironment::Sandbox => "sandbox.plaid.com",
        }
    }
}

/// Checked `[endpoint.plaid]`.
#[derive(Debug, Clone, Serialize)]
pub struct PlaidApi {
    /// Which Plaid API serves the keys.
    pub environment: PlaidEnvironment,
    /// Not a secret: Plaid shows it beside the secret.
    pub client_id: String,
    /// Where the Plaid secret comes from.
    pub secret: SecretSource,
}

/// `[endpoint.plaid]` as written.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PlaidApiFile {
    /// `"production"` or `"sandbox"`: the Plaid environment the webhooks come from.
    pub environment: PlaidEnvironment,
    /// The Plaid `client_id`.
    pub client_id: String,
    /// The Plaid `secret` of that environment (development only: prefer `secret_env` or `secret_file`).
    #[serde(
        default,
        skip_serializing,
        deserialize_with = "super::inline_secret::deserialize"
    )]
    pub secret: Option<SecretString>,
    /// The name of an environment variable holding the secret.
    pub secret_env: Option<String>,
    /// A file holding the secret (trailing newline trimmed; relative to the config file).
    pub secret_file: Option<PathBuf>,
}

impl PlaidApi {
    /// Checks `[endpoint.plaid]`; `field` names it in errors.
    pub fn from_file(
        file: PlaidApiFile,
        field: &str,
        base_dir: &Path,
    ) -> Result<PlaidApi, ConfigError> {
        let client_id = file.client_id.trim();
        if client_id.is_empty() || !client_id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(ConfigError::invalid(
                format!("{field}.client_id"),
                "must be the Plaid client_id: letters and digits",
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
        Ok(PlaidApi {
            environment: file.environment,
            client_id: client_id.to_owned(),
            secret,
        })
    }
}
