//! `[reconcile]` and `[endpoint.reconcile]`, as parsed (the `*File`
//! structs) and checked: the background pass
//! of `serve`, and a provider's event list to compare the inbox with.

use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper::Uri;
use secrecy::SecretString;
use serde::{Deserialize, Serialize, Serializer};

use super::checks::{non_zero_usize, positive, whole_seconds};
use super::secret_source::{SecretFields, SecretSource};
use super::ConfigError;

/// The longest `lookback` of a Stripe source: the events API lists the
/// last 30 days only.
const STRIPE_MAX_LOOKBACK: Duration = Duration::from_secs(30 * 24 * 3600);

/// How reconciliation runs.
#[derive(Debug, Clone, Serialize)]
pub struct Reconcile {
    /// Whether `serve` reconciles in the background.
    pub enabled: bool,
    /// How often.
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
    /// Events accepted within it are checked for missing delivery rows.
    #[serde(with = "humantime_serde")]
    pub lookback: Duration,
    /// Most items of each kind repaired in one pass.
    pub batch: NonZeroUsize,
}

impl Reconcile {
    pub(super) fn from_file(file: ReconcileFile) -> Result<Reconcile, ConfigError> {
        Ok(Reconcile {
            enabled: file.enabled,
            interval: positive(file.interval, "reconcile.interval")?,
            lookback: positive(file.lookback, "reconcile.lookback")?,
            batch: non_zero_usize(file.batch, "reconcile.batch")?,
        })
    }
}

/// A provider's event list (Stripe's `GET /v1/events`).
#[derive(Debug, Clone, Serialize)]
pub struct EndpointReconcile {
    /// Where the API key comes from.
    pub api_key: SecretSource,
    /// The API's scheme, host and port (`https://api.stripe.com`).
    #[serde(serialize_with = "as_display")]
    pub base_url: Uri,
    /// Each pass lists events created since this long ago.
    #[serde(with = "humantime_serde")]
    pub lookback: Duration,
    /// Events per page, 1–100.
    pub page_size: NonZeroU32,
    /// How long one request may take.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

fn as_display<S: Serializer>(uri: &Uri, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(uri)
}

impl EndpointReconcile {
    /// `field` names the table (`endpoint[0].reconcile`); `provider` is
    /// the endpoint's, which must have an event list hookinbox can read.
    pub(super) fn from_file(
        file: EndpointReconcileFile,
        provider: &str,
        field: &str,
        base_dir: &Path,
    ) -> Result<EndpointReconcile, ConfigError> {
        let sub = |name: &str| format!("{field}.{name}");
        if provider != "stripe" {
            return Err(ConfigError::invalid(
                field,
                format!(
                    "provider `{provider}` has no event list to reconcile with (only stripe has)"
                ),
            ));
        }
        let api_key = SecretSource::required(
            SecretFields {
                name: "api_key",
                inline: file.api_key.as_ref(),
                env: file.api_key_env.as_deref(),
                file: file.api_key_file.as_deref(),
            },
            field,
            base_dir,
        )?;
        let base_url: Uri = file.base_url.parse().map_err(|_| {
            ConfigError::invalid(
                sub("base_url"),
                format!("`{}` is not a valid URL", file.base_url),
            )
        })?;
        let scheme_ok = matches!(base_url.scheme_str(), Some("https" | "http"));
        let bare = base_url.path() == "/" || base_url.path().is_empty();
        if !scheme_ok || base_url.host().is_none() || !bare || base_url.query().is_some() {
            return Err(ConfigError::invalid(
                sub("base_url"),
                "must be an http:// or https:// URL with a host and no path",
            ));
        }
        whole_seconds(file.lookback, &sub("lookback"))?;
        if file.lookback.is_zero() || file.lookback > STRIPE_MAX_LOOKBACK {
            return Err(ConfigError::invalid(
                sub("lookback"),
                "must be between 1 s and 30 days (the events Stripe lists)",
            ));
        }
        let page_size = NonZeroU32::new(file.page_size)
            .filter(|size| size.get() <= 100)
            .ok_or_else(|| ConfigError::invalid(sub("page_size"), "must be between 1 and 100"))?;
        Ok(EndpointReconcile {
            api_key,
            base_url,
            lookback: file.lookback,
            page_size,
            timeout: positive(file.timeout, &sub("timeout"))?,
        })
    }
}

/// `[reconcile]`: what `serve` repairs in the background, and how
/// `hookinbox reconcile` looks.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileFile {
    /// Whether `serve` reconciles every `interval` (repairing what is safe).
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// How often `serve` reconciles.
    #[serde(default = "default_reconcile_interval", with = "humantime_serde")]
    pub interval: Duration,
    /// Events accepted this long ago or later are checked for missing
    /// delivery rows (leases and statuses are checked whatever their age).
    #[serde(default = "default_reconcile_lookback", with = "humantime_serde")]
    pub lookback: Duration,
    /// Most items of each kind repaired in one pass.
    #[serde(default = "default_reconcile_batch")]
    pub batch: usize,
}

fn default_true() -> bool {
    true
}
fn default_reconcile_interval() -> Duration {
    Duration::from_secs(15 * 60)
}
fn default_reconcile_lookback() -> Duration {
    Duration::from_secs(24 * 3600)
}
fn default_reconcile_batch() -> usize {
    1000
}

impl Default for ReconcileFile {
    fn default() -> Self {
        ReconcileFile {
            enabled: default_true(),
            interval: default_reconcile_interval(),
            lookback: default_reconcile_lookback(),
            batch: default_reconcile_batch(),
        }
    }
}

/// `[endpoint.reconcile]`: the provider's event list, for a `stripe`
/// endpoint (`GET /v1/events`).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointReconcileFile {
    /// The API key (a restricted key that may read events), inline
    /// (development only: prefer `api_key_env` or `api_key_file`).
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub api_key: Option<SecretString>,
    /// The API key from an environment variable.
    pub api_key_env: Option<String>,
    /// The API key from a file (trailing newline trimmed; relative to the config file).
    pub api_key_file: Option<PathBuf>,
    /// Where the API is: `https://` (or `http://` for a local stand-in).
    #[serde(default = "default_stripe_api")]
    pub base_url: String,
    /// How far back each pass lists events (`created[gte]`); at most 30
    /// days, all Stripe keeps. Whole seconds.
    #[serde(default = "default_provider_lookback", with = "humantime_serde")]
    pub lookback: Duration,
    /// Events asked for per page (`limit`, 1–100).
    #[serde(default = "default_page_size")]
    pub page_size: u32,
    /// How long one API request may take.
    #[serde(default = "default_api_timeout", with = "humantime_serde")]
    pub timeout: Duration,
}

fn default_stripe_api() -> String {
    "https://api.stripe.com".into()
}
/// Three days: Stripe's own retries cover that long, so a pass sees every
/// event a retry could still bring.
fn default_provider_lookback() -> Duration {
    Duration::from_secs(3 * 24 * 3600)
}
fn default_page_size() -> u32 {
    100
}
fn default_api_timeout() -> Duration {
    Duration::from_secs(10)
}
