//! `[[endpoint.target]]`, checked: where events go and the retry budget.
//! What a kind of target takes is in its variant, so an `http` target
//! without a URL or a `handler` target with a secret cannot be represented.

use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper::Uri;
use serde::{Serialize, Serializer};

use super::checks::{non_zero_u32, non_zero_usize, positive};
use super::file::{TargetFile, TargetKindName};
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
}

impl TargetKind {
    /// As `kind` is spelled in the file.
    pub fn name(&self) -> &'static str {
        match self {
            TargetKind::Http(_) => "http",
            TargetKind::Handler => "handler",
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
                let set = [
                    ("url", file.url.is_some()),
                    ("ca_file", file.ca_file.is_some()),
                    ("secret", file.secret.is_some()),
                    ("secret_env", file.secret_env.is_some()),
                    ("secret_file", file.secret_file.is_some()),
                ];
                if let Some((name, _)) = set.iter().find(|(_, is_set)| *is_set) {
                    return Err(ConfigError::invalid(
                        sub(name),
                        "a handler target runs in-process and takes no url, secret or ca_file",
                    ));
                }
                TargetKind::Handler
            }
            TargetKindName::Http => {
                let text = file.url.as_deref().ok_or_else(|| {
                    ConfigError::invalid(sub("url"), "an http target needs a url")
                })?;
                let url: Uri = text.parse().map_err(|_| {
                    ConfigError::invalid(sub("url"), format!("`{text}` is not a valid URL"))
                })?;
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
                        inline: file.secret.as_deref(),
                        env: file.secret_env.as_deref(),
                        file: file.secret_file.as_deref(),
                    },
                    field,
                    base_dir,
                )?;
                TargetKind::Http(HttpDestination {
                    url,
                    secret,
                    ca_file: file.ca_file.map(|ca| base_dir.join(ca)),
                    timeout: positive(file.timeout, &sub("timeout"))?,
                })
            }
        };
        Ok(Target {
            name: file.name,
            kind,
            max_attempts: non_zero_u32(file.max_attempts, &sub("max_attempts"))?,
            max_age: positive(file.max_age, &sub("max_age"))?,
            concurrency: non_zero_usize(file.concurrency, &sub("concurrency"))?,
            retry_base: file.retry_base,
            retry_cap: file.retry_cap,
        })
    }
}
