//! A delivery target at run time: where events go, its retry budget, its
//! concurrency, and the wake-up the ingress pokes when it accepts an event.

use std::time::Duration;

use hookinbox_verify::{Adapter, Key};
use hyper::Uri;
use tokio::sync::Notify;

use super::http_target::HttpTarget;
use super::retry_policy::RetryPolicy;
use super::tls::TrustRoots;
use crate::config::{parse_duration_ms, ConfigError, TargetConfig, TargetKind};
use crate::secret_source::resolve_one;

/// How events reach the target.
#[derive(Debug)]
pub enum Sender {
    Http(Box<HttpTarget>),
    /// A library handler, registered by the embedding program under the
    /// target's name and bound when the workers start.
    Handler,
}

#[derive(Debug)]
pub struct Target {
    pub endpoint_id: String,
    pub name: String,
    pub sender: Sender,
    pub policy: RetryPolicy,
    pub concurrency: usize,
    /// How long a lease lasts; the worker heartbeats at a third of it.
    pub lease: Duration,
    /// Poked by the ingress after a commit, so idle workers start at once
    /// instead of at their next poll.
    pub wakeup: Notify,
}

impl Target {
    /// Builds a target; `field` names it in errors (`endpoint[0].target[1]`).
    pub fn build(
        endpoint_id: &str,
        config: &TargetConfig,
        field: &str,
        base_dir: &std::path::Path,
        lease: Duration,
    ) -> Result<Target, ConfigError> {
        let timeout = Duration::from_millis(config.timeout_ms);
        let sender = match config.kind {
            TargetKind::Handler => Sender::Handler,
            TargetKind::Http => {
                let url: Uri = config
                    .url
                    .as_deref()
                    .ok_or_else(|| {
                        ConfigError::invalid(format!("{field}.url"), "an http target needs a url")
                    })?
                    .parse()
                    .map_err(|_| ConfigError::invalid(format!("{field}.url"), "not a valid URL"))?;
                if url.host().is_none() {
                    return Err(ConfigError::invalid(
                        format!("{field}.url"),
                        "the URL has no host",
                    ));
                }
                let secret = resolve_one(
                    config.secret.as_deref(),
                    config.secret_env.as_deref(),
                    config.secret_file.as_deref(),
                    base_dir,
                    field,
                    ("secret", "secret_env", "secret_file"),
                )?;
                // The same decoding the internal app's Standard Webhooks library applies.
                let key = hookinbox_verify::providers::standard::Standard
                    .parse_key(&secret)
                    .map_err(|e| {
                        ConfigError::invalid(
                            format!("{field}.secret"),
                            format!("expected a whsec_ secret: {e}"),
                        )
                    })?;
                let Key::Hmac(key) = key else {
                    return Err(ConfigError::invalid(
                        format!("{field}.secret"),
                        "expected a whsec_ (HMAC) secret, not a public key",
                    ));
                };
                let https = match url.scheme_str() {
                    Some("https") => true,
                    Some("http") => false,
                    _ => {
                        return Err(ConfigError::invalid(
                            format!("{field}.url"),
                            "must be an http:// or https:// URL",
                        ))
                    }
                };
                match (https, &config.ca_file) {
                    (false, None) => Sender::Http(Box::new(HttpTarget::new(url, timeout, key))),
                    (false, Some(_)) => {
                        return Err(ConfigError::invalid(
                            format!("{field}.ca_file"),
                            "only https:// targets use a ca_file",
                        ))
                    }
                    (true, ca_file) => {
                        let roots = match ca_file {
                            Some(file) => TrustRoots::from_ca_file(
                                file,
                                base_dir,
                                &format!("{field}.ca_file"),
                            )?,
                            None => TrustRoots::Mozilla,
                        };
                        let target =
                            HttpTarget::with_tls(url, timeout, key, roots).map_err(|e| {
                                ConfigError::invalid(
                                    format!("{field}.url"),
                                    format!("cannot set up TLS: {e}"),
                                )
                            })?;
                        Sender::Http(Box::new(target))
                    }
                }
            }
        };
        let max_age_ms = parse_duration_ms(&config.max_age).ok_or_else(|| {
            ConfigError::invalid(
                format!("{field}.max_age"),
                "expected a duration such as \"3d\"",
            )
        })?;
        // An HTTP attempt may take its whole timeout: the lease outlasts it.
        // A handler runs inside one commit; its timeout does not apply.
        let lease = match sender {
            Sender::Http(_) => lease.max(timeout * 2),
            Sender::Handler => lease,
        };
        Ok(Target {
            endpoint_id: endpoint_id.to_owned(),
            name: config.name.clone(),
            sender,
            policy: RetryPolicy {
                max_attempts: config.max_attempts,
                max_age_ms: max_age_ms as i64,
                base_ms: config.retry_base_ms as i64,
                cap_ms: config.retry_cap_ms as i64,
            },
            concurrency: config.concurrency,
            lease,
            wakeup: Notify::new(),
        })
    }
}
