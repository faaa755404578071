//! An endpoint at run time: its verifier (adapter + key ring), limits and
//! rate limiter, built once from configuration at start-up.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use hookinbox_verify::{adapter_for, AdapterSettings, Failure, SecretInput, Verified, Verifier};

use crate::basic_auth::BasicAuth;
use crate::config::{Config, ConfigError, EndpointConfig};
use crate::delivery::target::Target;

/// Media types accepted when an endpoint does not list its own.
const DEFAULT_CONTENT_TYPES: &[&str] = &["application/json", "application/x-www-form-urlencoded"];

/// One configured endpoint, ready to serve.
pub struct Endpoint {
    pub id: String,
    pub provider: &'static str,
    pub verifier: Verifier,
    /// A credential required besides the signature (`basic_auth`).
    basic_auth: Option<BasicAuth>,
    pub max_body_bytes: usize,
    content_types: Vec<String>,
    rate_limiter: Option<DefaultDirectRateLimiter>,
    /// JSON pointers (object id, object version) that override the adapter's.
    ordering_pointers: Option<(String, String)>,
    /// Where accepted events are delivered.
    pub targets: Vec<Arc<Target>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("id", &self.id)
            .field("provider", &self.provider)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// Builds an endpoint; `index` names it in errors (`endpoint[2].…`).
    pub fn build(
        config: &EndpointConfig,
        index: usize,
        base_dir: &std::path::Path,
        lease: std::time::Duration,
    ) -> Result<Endpoint, ConfigError> {
        let field = |name: &str| format!("endpoint[{index}].{name}");
        let settings = AdapterSettings {
            public_url: config.public_url.clone(),
            generic_hmac: config.generic_hmac.clone(),
        };
        let adapter = adapter_for(&config.provider, &settings)
            .map_err(|e| ConfigError::invalid(field("provider"), e.to_string()))?;
        let provider = adapter.name();
        let basic_auth = match &config.basic_auth {
            Some(auth) => Some(BasicAuth::resolve(auth, base_dir, &field("basic_auth"))?),
            None if adapter.coverage().needs_endpoint_credential() => {
                return Err(ConfigError::invalid(
                    field("basic_auth"),
                    format!(
                        "is required for provider `{provider}`: its signature does not cover \
                         the body, so anyone holding a webhook signed with the same key (every \
                         webhook of the account carries one) could attach any body to it; set \
                         basic_auth and put the credentials in the webhook URL \
                         (https://user:password@host/hooks/{})",
                        config.id
                    ),
                ))
            }
            None => None,
        };
        let mut secrets = Vec::with_capacity(config.secrets.len());
        for (n, secret) in config.secrets.iter().enumerate() {
            let value = secret.resolve(base_dir, &field(&format!("secret[{n}]")))?;
            secrets.push(SecretInput {
                version: secret.version.clone(),
                value,
                not_before: secret.not_before,
                not_after: secret.not_after,
            });
        }
        let verifier = Verifier::new(adapter, secrets)
            .map_err(|e| ConfigError::invalid(field("secret"), e.to_string()))?
            .with_tolerance_seconds(config.tolerance_seconds)
            .with_allowed_types(config.event_types.clone());
        let content_types = config
            .content_types
            .clone()
            .unwrap_or_else(|| {
                DEFAULT_CONTENT_TYPES
                    .iter()
                    .map(|t| (*t).to_owned())
                    .collect()
            })
            .into_iter()
            .map(|t| t.trim().to_ascii_lowercase())
            .collect();
        let rate_limiter = match &config.rate_limit {
            Some(rate) => {
                let per_second = NonZeroU32::new(rate.per_second).ok_or_else(|| {
                    ConfigError::invalid(field("rate_limit.per_second"), "must be positive")
                })?;
                let burst =
                    NonZeroU32::new(rate.burst.unwrap_or(rate.per_second)).ok_or_else(|| {
                        ConfigError::invalid(field("rate_limit.burst"), "must be positive")
                    })?;
                Some(RateLimiter::direct(
                    Quota::per_second(per_second).allow_burst(burst),
                ))
            }
            None => None,
        };
        let mut targets = Vec::with_capacity(config.targets.len());
        for (t, target) in config.targets.iter().enumerate() {
            targets.push(Arc::new(Target::build(
                &config.id,
                target,
                &field(&format!("target[{t}]")),
                base_dir,
                lease,
            )?));
        }
        Ok(Endpoint {
            id: config.id.clone(),
            provider,
            verifier,
            basic_auth,
            max_body_bytes: config.max_body_bytes,
            content_types,
            rate_limiter,
            ordering_pointers: config.object_id.clone().zip(config.object_version.clone()),
            targets,
        })
    }

    /// Checks the endpoint's own credential, if it has one (cheap, so
    /// first), then runs the verification pipeline at `now`.
    pub fn verify(
        &self,
        request: &hookinbox_verify::Request<'_>,
        now: i64,
    ) -> Result<Verified, Failure> {
        if let Some(basic_auth) = &self.basic_auth {
            basic_auth
                .check(request.headers)
                .map_err(|refusal| Failure {
                    refusal,
                    diagnosis: Box::default(),
                })?;
        }
        self.verifier.verify(request, now)
    }

    /// For a provider whose event id is not signed, its redelivery window in
    /// milliseconds: inside it, the same body under another id is the same
    /// event (see `NewEvent::fingerprint_window_ms`). `None` when the id is
    /// signed.
    pub fn fingerprint_window_ms(&self) -> Option<i64> {
        let adapter = self.verifier.adapter();
        (!adapter.coverage().event_id).then(|| {
            i64::try_from(adapter.redelivery_window_seconds().saturating_mul(1000))
                .unwrap_or(i64::MAX)
        })
    }

    /// Whether a body of this media type (lower-cased, without parameters) is taken.
    pub fn accepts_media_type(&self, media_type: Option<&str>) -> bool {
        let Some(media_type) = media_type else {
            return self.content_types.iter().any(|t| t == "*");
        };
        self.content_types.iter().any(|allowed| {
            allowed == "*"
                || allowed == media_type
                || (allowed == "application/json"
                    && media_type.starts_with("application/")
                    && media_type.ends_with("+json"))
        })
    }

    /// The names of the endpoint's delivery targets (one delivery row each per event).
    pub fn target_names(&self) -> Vec<String> {
        self.targets.iter().map(|t| t.name.clone()).collect()
    }

    /// Wakes the workers of every target after an event was committed.
    pub fn wake_targets(&self) {
        for target in &self.targets {
            target.wakeup.notify_one();
        }
    }

    /// Applies the configured object id/version pointers to a verified
    /// envelope. A pointer that finds nothing leaves the event unordered.
    pub fn apply_ordering(&self, envelope: &mut hookinbox_verify::Envelope, body: &[u8]) {
        let Some((id_pointer, version_pointer)) = &self.ordering_pointers else {
            return;
        };
        let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) else {
            return;
        };
        envelope.object_id = hookinbox_verify::envelope::string_at(&json, id_pointer);
        envelope.object_version = hookinbox_verify::envelope::integer_at(&json, version_pointer);
    }

    /// Takes one request from the rate limit; `Err` carries the seconds to wait.
    pub fn check_rate(&self) -> Result<(), u64> {
        let Some(limiter) = &self.rate_limiter else {
            return Ok(());
        };
        limiter.check().map_err(|not_until| {
            let wait = not_until.wait_time_from(governor::clock::Clock::now(
                &governor::clock::DefaultClock::default(),
            ));
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        })
    }
}

/// Every endpoint by id.
pub type Endpoints = HashMap<String, Arc<Endpoint>>;

/// Builds every endpoint of a configuration; the first error stops start-up.
pub fn build_all(config: &Config) -> Result<Endpoints, ConfigError> {
    config
        .endpoints
        .iter()
        .enumerate()
        .map(|(index, endpoint)| {
            let lease = std::time::Duration::from_millis(config.delivery.lease_ms);
            Endpoint::build(endpoint, index, &config.base_dir, lease)
                .map(|built| (built.id.clone(), Arc::new(built)))
        })
        .collect()
}
