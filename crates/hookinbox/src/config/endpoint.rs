//! `[[endpoint]]`, as parsed (the `*File`
//! structs) and checked: its id, provider scheme, limits, key ring
//! sources, credential and targets.
//!
//! The provider's adapter is built once here, so an unknown provider, a
//! `generic_hmac` table that cannot work or a Mailgun endpoint without
//! `basic_auth` stop the configuration, not a later step.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookinbox_verify::providers::generic_hmac::{GenericHmacSettings, HmacAlgorithm};
use hookinbox_verify::{adapter_for, AdapterSettings, SettingsError, SignatureEncoding};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::checks::{non_zero_usize, whole_seconds};
use super::plaid_api::{PlaidApi, PlaidApiFile};
use super::reconcile::{EndpointReconcile, EndpointReconcileFile};
use super::secret_source::{SecretFields, SecretSource};
use super::server::{RateLimit, RateLimitFile};
use super::target::{Target, TargetFile};
use super::ConfigError;

/// Largest `max_body_bytes` an endpoint may set: a body is held in memory whole.
const MAX_BODY_BYTES_LIMIT: usize = 64 * 1024 * 1024;

/// One webhook endpoint.
#[derive(Debug, Clone, Serialize)]
pub struct Endpoint {
    /// 1–64 letters, digits, `-`, `_` or `.`: a path segment as it stands.
    pub id: String,
    /// The provider's registered name (`stripe`, `generic_hmac`, …).
    pub provider: &'static str,
    /// Whole seconds; `None`: the provider's default.
    #[serde(with = "humantime_serde")]
    pub tolerance: Option<Duration>,
    /// At most 64 MiB.
    pub max_body_bytes: NonZeroUsize,
    /// The URL providers call, for providers that sign it (Twilio, Square).
    pub public_url: Option<String>,
    /// The token of the provider's URL-verification GET (Meta's
    /// `hub.verify_token`).
    pub verify_token: Option<String>,
    /// The id the provider gave this URL, part of what it signs (PayPal's
    /// webhook id).
    pub webhook_id: Option<String>,
    /// Lower-cased media types, or `"*"`.
    pub content_types: Vec<String>,
    /// Event types stored; others are acknowledged and ignored. `None`: all.
    pub event_types: Option<Vec<String>>,
    /// Verified requests per second the endpoint takes (429 past it).
    pub rate_limit: Option<RateLimit>,
    /// JSON pointers to an object id and its version, for per-object
    /// ordering; they override the provider's.
    #[serde(flatten)]
    pub ordering: Option<ObjectOrdering>,
    /// A credential required besides the signature.
    pub basic_auth: Option<BasicAuth>,
    /// `[endpoint.generic_hmac]`: the scheme of a `generic_hmac` endpoint.
    pub generic_hmac: Option<GenericHmacFile>,
    /// `[endpoint.plaid]`: the API credentials a `plaid` endpoint fetches
    /// its keys with.
    pub plaid: Option<PlaidApi>,
    /// At least one, except for providers that serve their own keys
    /// (`paypal`, `aws_sns`, `plaid`), which take none.
    #[serde(rename = "secret")]
    pub secrets: Vec<SecretVersion>,
    /// Names unique within the endpoint.
    #[serde(rename = "target")]
    pub targets: Vec<Target>,
    /// `[endpoint.reconcile]`: the provider's event list, if configured.
    pub reconcile: Option<EndpointReconcile>,
}

/// JSON pointers to an object id and its version, for per-object ordering.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectOrdering {
    /// JSON pointer to the object id.
    pub object_id: String,
    /// JSON pointer to the object's version.
    pub object_version: String,
}

/// One version of the key ring.
#[derive(Debug, Clone, Serialize)]
pub struct SecretVersion {
    /// Not empty.
    pub version: String,
    /// Where the secret comes from.
    pub value: SecretSource,
    /// Unix seconds before which this version does not verify yet; not
    /// after `not_after` when both are set.
    pub not_before: Option<i64>,
    /// Unix seconds after which this version no longer verifies.
    pub not_after: Option<i64>,
}

/// The credential an endpoint requires besides the signature.
#[derive(Debug, Clone, Serialize)]
pub struct BasicAuth {
    /// Not empty, without `:`.
    pub username: String,
    /// Where the password comes from.
    pub password: SecretSource,
}

impl Endpoint {
    /// Whether the provider hands its secret over in a handshake (Asana,
    /// Notion): such a secret is kept sealed, so it needs a key ring.
    pub fn learns_secrets(&self) -> bool {
        let settings =
            adapter_settings(&self.public_url, &self.verify_token, &self.webhook_id, None);
        adapter_for(self.provider, &settings).is_ok_and(|adapter| adapter.learns_secrets())
    }

    /// `index` names the endpoint in errors (`endpoint[2].…`).
    pub(super) fn from_file(
        file: EndpointFile,
        index: usize,
        base_dir: &Path,
    ) -> Result<Endpoint, ConfigError> {
        let field = |name: &str| format!("endpoint[{index}].{name}");
        let id_ok = !file.id.is_empty()
            && file.id.len() <= 64
            && file
                .id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
        if !id_ok {
            return Err(ConfigError::invalid(
                field("id"),
                "must be 1–64 characters of letters, digits, `-`, `_` or `.`",
            ));
        }
        if let Some(generic_hmac) = &file.generic_hmac {
            if let Some(tolerance) = generic_hmac.tolerance {
                whole_seconds(tolerance, &field("generic_hmac.tolerance"))?;
            }
            whole_seconds(
                generic_hmac.redelivery_window,
                &field("generic_hmac.redelivery_window"),
            )?;
        }
        let settings = adapter_settings(
            &file.public_url,
            &file.verify_token,
            &file.webhook_id,
            file.generic_hmac.as_ref(),
        );
        let (provider, learns_secrets) = check_provider(
            &file.provider,
            &settings,
            file.basic_auth.is_some(),
            &file.id,
            index,
        )?;
        let tolerance = file
            .tolerance
            .map(|tolerance| whole_seconds(tolerance, &field("tolerance")).map(|_| tolerance))
            .transpose()?;
        let max_body_bytes = non_zero_usize(file.max_body_bytes, &field("max_body_bytes"))
            .ok()
            .filter(|bytes| bytes.get() <= MAX_BODY_BYTES_LIMIT)
            .ok_or_else(|| {
                ConfigError::invalid(field("max_body_bytes"), "must be between 1 and 64 MiB")
            })?;
        let ordering = match (file.object_id, file.object_version) {
            (Some(object_id), Some(object_version)) => Some(ObjectOrdering {
                object_id,
                object_version,
            }),
            (None, None) => None,
            _ => {
                return Err(ConfigError::invalid(
                    field("object_id"),
                    "`object_id` and `object_version` go together: ordering needs both",
                ))
            }
        };
        let rate_limit = file
            .rate_limit
            .as_ref()
            .map(|rate| RateLimit::from_file(rate, &field("rate_limit")))
            .transpose()?;
        let basic_auth = file
            .basic_auth
            .map(|auth| BasicAuth::from_file(auth, &field("basic_auth"), base_dir))
            .transpose()?;
        // A provider that serves its own keys (docs/architecture.md §3) is
        // verified with them alone: a configured secret would never be used.
        let fetches_keys =
            adapter_for(provider, &settings).is_ok_and(|adapter| adapter.fetches_keys());
        // A provider that hands its secret over (Asana, Notion) may start
        // with none: it learns one in its handshake.
        if file.secret.is_empty() && !fetches_keys && !learns_secrets {
            return Err(ConfigError::invalid(
                field("secret"),
                "at least one [[endpoint.secret]] is required",
            ));
        }
        if !file.secret.is_empty() && fetches_keys {
            return Err(ConfigError::invalid(
                field("secret"),
                format!(
                    "provider `{provider}` takes no [[endpoint.secret]]: its keys are fetched from its own hosts"
                ),
            ));
        }
        if let Some(n) = file
            .secret
            .iter()
            .position(|secret| secret.version.starts_with("learned-"))
        {
            return Err(ConfigError::invalid(
                field(&format!("secret[{n}].version")),
                "`learned-…` names the secrets providers hand over; choose another name",
            ));
        }
        let secrets = file
            .secret
            .into_iter()
            .enumerate()
            .map(|(n, secret)| {
                SecretVersion::from_file(secret, &field(&format!("secret[{n}]")), base_dir)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let plaid = match (file.plaid, provider == "plaid") {
            (Some(plaid), true) => Some(PlaidApi::from_file(plaid, &field("plaid"), base_dir)?),
            (None, true) => {
                return Err(ConfigError::invalid(
                    field("plaid"),
                    "is required for provider `plaid`: its keys are fetched from Plaid's API with these credentials",
                ))
            }
            (Some(_), false) => {
                return Err(ConfigError::invalid(
                    field("plaid"),
                    "is for provider `plaid` only",
                ))
            }
            (None, false) => None,
        };
        let mut names = std::collections::HashSet::new();
        let mut targets = Vec::with_capacity(file.target.len());
        for (t, target) in file.target.into_iter().enumerate() {
            let target_field = field(&format!("target[{t}]"));
            if target.name.is_empty() || !names.insert(target.name.clone()) {
                return Err(ConfigError::invalid(
                    format!("{target_field}.name"),
                    "must be non-empty and unique within the endpoint",
                ));
            }
            let target = Target::from_file(target, &target_field, base_dir)?;
            target.check_filter_over_samples(provider, &file.id, &target_field)?;
            targets.push(target);
        }
        let reconcile = file
            .reconcile
            .map(|source| {
                EndpointReconcile::from_file(source, provider, &field("reconcile"), base_dir)
            })
            .transpose()?;
        Ok(Endpoint {
            id: file.id,
            provider,
            tolerance,
            max_body_bytes,
            public_url: file.public_url,
            verify_token: file.verify_token,
            webhook_id: file.webhook_id,
            content_types: file
                .content_types
                .unwrap_or_else(|| default_content_types(provider))
                .iter()
                .map(|t| t.trim().to_ascii_lowercase())
                .collect(),
            event_types: file.event_types,
            rate_limit,
            ordering,
            basic_auth,
            generic_hmac: file.generic_hmac,
            plaid,
            secrets,
            targets,
            reconcile,
        })
    }

    /// What the verify crate needs to build this endpoint's adapter.
    pub fn adapter_settings(&self) -> AdapterSettings {
        adapter_settings(
            &self.public_url,
            &self.verify_token,
            &self.webhook_id,
            self.generic_hmac.as_ref(),
        )
    }

    /// The timestamp tolerance in seconds, when the endpoint sets one.
    pub fn tolerance_seconds(&self) -> Option<u64> {
        self.tolerance.map(|t| t.as_secs())
    }
}

impl SecretVersion {
    fn from_file(
        file: SecretFile,
        field: &str,
        base_dir: &Path,
    ) -> Result<SecretVersion, ConfigError> {
        if file.version.trim().is_empty() {
            return Err(ConfigError::invalid(
                format!("{field}.version"),
                "must not be empty",
            ));
        }
        let value = SecretSource::required(
            SecretFields {
                name: "value",
                inline: file.value.as_ref(),
                env: file.value_env.as_deref(),
                file: file.value_file.as_deref(),
            },
            field,
            base_dir,
        )?;
        if let (Some(start), Some(end)) = (file.not_before, file.not_after) {
            if start > end {
                return Err(ConfigError::invalid(
                    format!("{field}.not_before"),
                    "is after not_after",
                ));
            }
        }
        Ok(SecretVersion {
            version: file.version,
            value,
            not_before: file.not_before,
            not_after: file.not_after,
        })
    }
}

impl BasicAuth {
    fn from_file(
        file: BasicAuthFile,
        field: &str,
        base_dir: &Path,
    ) -> Result<BasicAuth, ConfigError> {
        if file.username.is_empty() || file.username.contains(':') {
            return Err(ConfigError::invalid(
                format!("{field}.username"),
                "must be non-empty and without `:` (basic auth separates the password with it)",
            ));
        }
        let password = SecretSource::required(
            SecretFields {
                name: "password",
                inline: file.password.as_ref(),
                env: file.password_env.as_deref(),
                file: file.password_file.as_deref(),
            },
            field,
            base_dir,
        )?;
        Ok(BasicAuth {
            username: file.username,
            password,
        })
    }
}

/// Builds the provider's adapter once (the verify crate checks its own
/// settings) and applies what its coverage requires; returns the provider's
/// registered name.
fn check_provider(
    provider: &str,
    settings: &AdapterSettings,
    has_basic_auth: bool,
    id: &str,
    index: usize,
) -> Result<(&'static str, bool), ConfigError> {
    let adapter = adapter_for(provider, settings).map_err(|error| provider_error(error, index))?;
    let name = adapter.name();
    if !has_basic_auth && adapter.coverage().needs_endpoint_credential() {
        return Err(ConfigError::invalid(
            format!("endpoint[{index}].basic_auth"),
            format!(
                "is required for provider `{name}`: its signature does not cover the body, \
                 so anyone holding a webhook signed with the same key (every webhook of \
                 the account carries one) could attach any body to it; set basic_auth and \
                 put the credentials in the webhook URL (https://user:password@host/hooks/{id})"
            ),
        ));
    }
    Ok((name, adapter.learns_secrets()))
}

fn adapter_settings(
    public_url: &Option<String>,
    verify_token: &Option<String>,
    webhook_id: &Option<String>,
    generic_hmac: Option<&GenericHmacFile>,
) -> AdapterSettings {
    AdapterSettings {
        public_url: public_url.clone(),
        verify_token: verify_token.clone(),
        webhook_id: webhook_id.clone(),
        generic_hmac: generic_hmac.map(generic_hmac_settings),
    }
}

/// The verify crate's settings for a `[endpoint.generic_hmac]` table (its
/// durations were checked to be whole seconds).
fn generic_hmac_settings(file: &GenericHmacFile) -> GenericHmacSettings {
    GenericHmacSettings {
        signature_header: file.signature_header.clone(),
        signature_prefix: file.signature_prefix.clone(),
        signed_content: file.signed_content.clone(),
        algorithm: match file.algorithm {
            HmacAlgorithmName::Sha256 => HmacAlgorithm::Sha256,
            HmacAlgorithmName::Sha1 => HmacAlgorithm::Sha1,
        },
        encoding: match file.encoding {
            SignatureEncodingName::Hex => SignatureEncoding::Hex,
            SignatureEncodingName::Base64 => SignatureEncoding::Base64,
        },
        timestamp_header: file.timestamp_header.clone(),
        tolerance_seconds: file.tolerance.map(|t| t.as_secs()),
        id_header: file.id_header.clone(),
        id_pointer: file.id_pointer.clone(),
        type_header: file.type_header.clone(),
        type_pointer: file.type_pointer.clone(),
        redelivery_window_seconds: file.redelivery_window.as_secs(),
    }
}

/// The verify crate's complaint, under the endpoint's field names: its
/// settings call the durations `*_seconds`, the file does not.
fn provider_error(error: SettingsError, index: usize) -> ConfigError {
    let in_file = |field: &str| {
        let field = field
            .replace("tolerance_seconds", "tolerance")
            .replace("redelivery_window_seconds", "redelivery_window");
        format!("endpoint[{index}].{field}")
    };
    match error {
        SettingsError::Invalid { field, message } => ConfigError::invalid(in_file(field), message),
        SettingsError::Missing { provider, field } => ConfigError::invalid(
            in_file(field),
            format!("is required by provider `{provider}`"),
        ),
        unknown @ SettingsError::UnknownProvider { .. } => {
            ConfigError::invalid(format!("endpoint[{index}].provider"), unknown.to_string())
        }
    }
}

/// `[[endpoint]]`: one webhook endpoint, a provider scheme and its key ring.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointFile {
    /// The path segment: the endpoint is served at `/hooks/{id}`.
    pub id: String,
    /// The provider scheme (`stripe`, `github`, `lab`, `generic_hmac`, …).
    pub provider: String,
    /// How far a signed timestamp may be from now, either way; the
    /// provider's own default when absent. Whole seconds.
    #[serde(default, with = "humantime_serde")]
    pub tolerance: Option<Duration>,
    /// Largest accepted body in bytes (at most 64 MiB).
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// The public URL the provider was given, for schemes that sign the URL
    /// (Twilio, Square).
    pub public_url: Option<String>,
    /// The "Verify Token" entered in the provider's dashboard, which its
    /// URL-verification GET presents (Meta's `hub.verify_token`; required
    /// for `meta`).
    pub verify_token: Option<String>,
    /// The webhook id PayPal shows for this listener URL, which PayPal signs
    /// into every request (required for `paypal`).
    pub webhook_id: Option<String>,
    /// Accepted media types; `"*"` accepts any. `application/json` also
    /// takes `application/*+json`. Absent: JSON and forms (and `text/plain`
    /// for `aws_sns`, which sends its JSON as that).
    #[serde(default)]
    pub content_types: Option<Vec<String>>,
    /// Event types to store; others are acknowledged and ignored. A trailing
    /// `*` matches a prefix. Absent: every type is stored.
    pub event_types: Option<Vec<String>>,
    /// Per-endpoint request rate limit, charged by verified requests only.
    pub rate_limit: Option<RateLimitFile>,
    /// JSON pointer to the object id in the body, for per-object ordering
    /// (overrides what the provider adapter reads).
    pub object_id: Option<String>,
    /// JSON pointer to a version of that object that only grows (an integer,
    /// or a string of digits); required with `object_id` for ordering.
    pub object_version: Option<String>,
    /// HTTP basic auth required on every request, besides the signature;
    /// required for providers whose signature does not cover the body (Mailgun).
    pub basic_auth: Option<BasicAuthFile>,
    /// The scheme of a `provider = "generic_hmac"` endpoint.
    pub generic_hmac: Option<GenericHmacFile>,
    /// The Plaid API credentials of a `provider = "plaid"` endpoint.
    pub plaid: Option<PlaidApiFile>,
    /// The key ring: every version trusted now (current and previous during a rotation).
    #[serde(default)]
    pub secret: Vec<SecretFile>,
    /// Where accepted events are delivered; one delivery row per target per event.
    #[serde(default)]
    pub target: Vec<TargetFile>,
    /// `stripe` endpoints: list the provider's recent events through its
    /// API and store those whose webhook never arrived.
    pub reconcile: Option<EndpointReconcileFile>,
}

fn default_max_body_bytes() -> usize {
    1024 * 1024
}
fn default_content_types(provider: &str) -> Vec<String> {
    let mut types = vec![
        "application/json".into(),
        "application/x-www-form-urlencoded".into(),
    ];
    // Amazon SNS posts its JSON messages as `text/plain; charset=UTF-8`.
    if provider == "aws_sns" {
        types.push("text/plain".into());
    }
    types
}

/// `[[endpoint.secret]]`: one version of an endpoint's key ring.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SecretFile {
    /// The operator's name for this version; recorded with every event it verifies.
    pub version: String,
    /// The secret itself (development only: prefer `value_env` or `value_file`).
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub value: Option<SecretString>,
    /// The name of an environment variable holding the secret.
    pub value_env: Option<String>,
    /// A file holding the secret (trailing newline trimmed; relative to the config file).
    pub value_file: Option<PathBuf>,
    /// Trusted from this unix second on.
    pub not_before: Option<i64>,
    /// Retired after this unix second.
    pub not_after: Option<i64>,
}

/// `basic_auth = { username = "…", password_env = "…" }` on an endpoint.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BasicAuthFile {
    /// The user name the provider sends (no `:`).
    pub username: String,
    /// The password itself (development only: prefer `password_env` or `password_file`).
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub password: Option<SecretString>,
    /// The name of an environment variable holding the password.
    pub password_env: Option<String>,
    /// A file holding the password (trailing newline trimmed; relative to the config file).
    pub password_file: Option<PathBuf>,
}

/// `[endpoint.generic_hmac]`: how a sender without a dedicated adapter
/// signs (`hookinbox_verify::providers::generic_hmac`). The verify crate
/// checks the combination; this is only its TOML spelling, with durations
/// as humantime strings like every other duration of the file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GenericHmacFile {
    /// The header that carries the signature (`X-Signature`).
    pub signature_header: String,
    /// Text before the encoded signature in its header (`sha256=`).
    pub signature_prefix: Option<String>,
    /// The exact signed bytes, as a template over `{body}` (required),
    /// `{timestamp}` and `{id}` (the headers' values as sent).
    #[serde(default = "default_signed_content")]
    pub signed_content: String,
    /// `sha256` or `sha1`.
    #[serde(default = "default_algorithm")]
    pub algorithm: HmacAlgorithmName,
    /// `hex` or `base64`: how the signature is written in its header.
    #[serde(default = "default_encoding")]
    pub encoding: SignatureEncodingName,
    /// The header that carries the signed timestamp, in integer unix seconds.
    pub timestamp_header: Option<String>,
    /// How far that timestamp may be from now, either way; only with
    /// `timestamp_header` (default 5 minutes then). Whole seconds.
    #[serde(default, with = "humantime_serde")]
    pub tolerance: Option<Duration>,
    /// The header that carries the event id (or `id_pointer`, not both).
    pub id_header: Option<String>,
    /// A JSON pointer (`/id`) to the event id in the body.
    pub id_pointer: Option<String>,
    /// The header that carries the event type, if any.
    pub type_header: Option<String>,
    /// A JSON pointer to the event type in the body, if any.
    pub type_pointer: Option<String>,
    /// How long the sender may redeliver one event: the minimum dedup
    /// retention. Whole seconds.
    #[serde(default = "default_redelivery_window", with = "humantime_serde")]
    pub redelivery_window: Duration,
}

fn default_signed_content() -> String {
    "{body}".to_owned()
}
fn default_algorithm() -> HmacAlgorithmName {
    HmacAlgorithmName::Sha256
}
fn default_encoding() -> SignatureEncodingName {
    SignatureEncodingName::Hex
}
/// Three days: long enough for the retry schedules of most senders, since a
/// generic sender's own window is unknown.
fn default_redelivery_window() -> Duration {
    Duration::from_secs(3 * 24 * 3600)
}

/// `generic_hmac.algorithm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HmacAlgorithmName {
    Sha256,
    Sha1,
}

/// `generic_hmac.encoding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SignatureEncodingName {
    Hex,
    Base64,
}
