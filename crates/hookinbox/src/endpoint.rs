//! An endpoint at run time: its verifier (adapter + key ring), limits and
//! rate limiter, built once from configuration at start-up. Only the
//! verifier can change afterwards: a key reload ([`crate::secrets::key_reload`])
//! swaps it whole, with the key ring read from the new secret versions, and
//! so does a secret a provider handed over ([`crate::secrets::learned`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use hookinbox_verify::{
    adapter_for, Failure, FetchedKeys, NoFetchedKeys, SecretInput, Verified, Verifier,
};
use secrecy::ExposeSecret;

use crate::config::{self, ConfigError, Settings};
use crate::delivery::target::Target;
use crate::key_fetch::PlaidCredentials;
use crate::routing::{RoutedEvent, RoutingDecision};
use crate::secrets::basic_auth::BasicAuth;
use crate::secrets::learned::LearnedVersions;
use crate::secrets::secret_matches::SecretMatches;
use crate::secrets::secret_rules;
use crate::telemetry::EndpointMetrics;

/// One configured endpoint, ready to serve.
pub struct Endpoint {
    pub id: String,
    pub provider: &'static str,
    /// Swapped whole by a key reload; a request verifies with the one it
    /// took at its start, so a swap never fails a request in flight.
    verifier: RwLock<Arc<Verifier>>,
    /// The settings it was built from, for a key reload to build the
    /// verifier again with new secret versions and nothing else changed.
    settings: config::Endpoint,
    /// Its place in the configuration, which errors name (`endpoint[2].…`).
    index: usize,
    /// The configured secret versions in use: the settings' until a key
    /// reload replaces them.
    secrets: RwLock<Vec<config::SecretVersion>>,
    /// Secrets its provider handed over (`learned-{n}`), in the key ring
    /// beside the configured ones.
    learned: LearnedVersions,
    /// Requests each secret version verified, by version name (kept across
    /// key reloads).
    matches: SecretMatches,
    /// A credential required besides the signature (`basic_auth`).
    basic_auth: Option<BasicAuth>,
    /// The credentials a `plaid` endpoint fetches Plaid's keys with.
    plaid: Option<PlaidCredentials>,
    pub max_body_bytes: usize,
    content_types: Vec<String>,
    rate_limiter: Option<DefaultDirectRateLimiter>,
    /// JSON pointers (object id, object version) that override the adapter's.
    ordering_pointers: Option<(String, String)>,
    /// Where accepted events are delivered.
    pub targets: Vec<Arc<Target>>,
    /// Its ingress metric handles (`telemetry::EndpointMetrics`).
    pub metrics: EndpointMetrics,
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
    /// Builds an endpoint from its checked settings: reads its secrets and
    /// targets' files. `index` names it in errors (`endpoint[2].…`).
    pub fn build(
        settings: &config::Endpoint,
        index: usize,
        lease: Duration,
    ) -> Result<Endpoint, ConfigError> {
        let field = |name: &str| format!("endpoint[{index}].{name}");
        let verifier = build_verifier(settings, index, Vec::new())?;
        let basic_auth = match &settings.basic_auth {
            Some(auth) => {
                let password = auth.password.read(&field("basic_auth.password"))?;
                Some(BasicAuth::new(&auth.username, &password))
            }
            None => None,
        };
        let plaid = match &settings.plaid {
            Some(api) => Some(PlaidCredentials {
                host: api.environment.host(),
                client_id: api.client_id.clone(),
                secret: api.secret.read(&field("plaid.secret"))?,
            }),
            None => None,
        };
        let rate_limiter = settings.rate_limit.map(|rate| {
            RateLimiter::direct(Quota::per_second(rate.per_second).allow_burst(rate.burst))
        });
        let mut targets = Vec::with_capacity(settings.targets.len());
        for (t, target) in settings.targets.iter().enumerate() {
            targets.push(Arc::new(Target::build(
                &settings.id,
                target,
                &field(&format!("target[{t}]")),
                lease,
            )?));
        }
        Ok(Endpoint {
            id: settings.id.clone(),
            provider: settings.provider,
            verifier: RwLock::new(Arc::new(verifier)),
            settings: settings.clone(),
            index,
            secrets: RwLock::new(settings.secrets.clone()),
            learned: LearnedVersions::default(),
            matches: SecretMatches::default(),
            basic_auth,
            plaid,
            max_body_bytes: settings.max_body_bytes.get(),
            content_types: settings.content_types.clone(),
            rate_limiter,
            ordering_pointers: settings
                .ordering
                .as_ref()
                .map(|o| (o.object_id.clone(), o.object_version.clone())),
            targets,
            metrics: EndpointMetrics::new(&settings.id),
        })
    }

    /// Checks the endpoint's own credential, if it has one (cheap, so
    /// first), then runs the verification pipeline at `now`.
    pub fn verify(
        &self,
        request: &hookinbox_verify::Request<'_>,
        now: i64,
    ) -> Result<Verified, Failure> {
        self.verify_with(&self.verifier(), request, now, &NoFetchedKeys)
    }

    fn verify_with(
        &self,
        verifier: &Verifier,
        request: &hookinbox_verify::Request<'_>,
        now: i64,
        fetched: &dyn FetchedKeys,
    ) -> Result<Verified, Failure> {
        if let Some(basic_auth) = &self.basic_auth {
            basic_auth
                .check(request.headers)
                .map_err(|refusal| Failure {
                    refusal,
                    diagnosis: Box::default(),
                })?;
        }
        verifier.verify_with_keys(request, now, fetched)
    }

    /// Whether the request carries the endpoint's own credential, when it
    /// has one (`basic_auth`); the pipeline checks it again and refuses.
    pub fn credential_ok(&self, headers: &hookinbox_verify::Headers) -> bool {
        self.basic_auth
            .as_ref()
            .is_none_or(|auth| auth.check(headers).is_ok())
    }

    /// The Plaid API credentials of a `plaid` endpoint.
    pub fn plaid_credentials(&self) -> Option<&PlaidCredentials> {
        self.plaid.as_ref()
    }

    /// Counts a request verified by secret `version` at `now`.
    pub fn record_match(&self, version: &str, now: i64) {
        self.matches.record(version, now);
    }

    /// The requests secret `version` verified in this process in the 24
    /// hours up to `now`.
    pub fn matches_last_24h(&self, version: &str, now: i64) -> u64 {
        self.matches.last_24h(version, now)
    }

    /// Every secret version (in the ring or removed from it by a reload)
    /// that verified requests in the 24 hours up to `now`, with its count.
    pub fn all_matches_last_24h(&self, now: i64) -> Vec<(String, u64)> {
        self.matches.all_last_24h(now)
    }

    /// The verifier in use now.
    pub fn verifier(&self) -> Arc<Verifier> {
        Arc::clone(&self.verifier.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Reads the secret versions of `secrets` from their sources and, when
    /// every one can be used, puts the key ring they make in place of the
    /// current one; every other setting of the endpoint stays as it was
    /// built. On an error (naming the field, as `endpoint[{index}].…`) the
    /// current key ring stays.
    pub fn replace_secrets(
        &self,
        secrets: &[config::SecretVersion],
        index: usize,
    ) -> Result<(), ConfigError> {
        let settings = config::Endpoint {
            secrets: secrets.to_vec(),
            ..self.settings.clone()
        };
        let verifier = Arc::new(build_verifier(&settings, index, self.learned.inputs())?);
        *self.secrets.write().unwrap_or_else(PoisonError::into_inner) = secrets.to_vec();
        *self
            .verifier
            .write()
            .unwrap_or_else(PoisonError::into_inner) = verifier;
        Ok(())
    }

    /// Whether its provider hands its signing secret over at run time
    /// (Asana, Notion).
    pub fn learns_secrets(&self) -> bool {
        self.verifier().adapter().learns_secrets()
    }

    /// The secrets its provider handed over, as last read.
    pub fn learned(&self) -> &LearnedVersions {
        &self.learned
    }

    /// Puts the secrets its provider handed over (read at `now` from the
    /// store) in the key ring beside the configured ones. A learned secret
    /// the adapter cannot use stays out, with a warning naming its version.
    pub fn use_learned(&self, learned: &[hookinbox_store::LearnedSecret], now: std::time::Instant) {
        self.learned.replace(learned, now);
        let settings = config::Endpoint {
            secrets: self
                .secrets
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            ..self.settings.clone()
        };
        match build_verifier(&settings, self.index, self.learned.inputs()) {
            Ok(verifier) => {
                *self
                    .verifier
                    .write()
                    .unwrap_or_else(PoisonError::into_inner) = Arc::new(verifier);
            }
            Err(error) => tracing::warn!(
                message = "A learned secret cannot be used; the key ring stays as it was.",
                endpoint = %self.id,
                %error
            ),
        }
    }

    /// [`Endpoint::verify`] as ingress runs it: with one key ring from
    /// start to end, and refused as [`NotVerified::NoActiveSecret`] when no
    /// secret version of that ring is inside its validity window at `now`.
    /// Then no request can be verified, whoever sent it: that is the
    /// service's own trouble (a rotation that left a gap), answered as such
    /// (`Rejection::NoActiveSecret`), never as a bad signature. A provider
    /// that serves its own keys has no secret versions: `fetched` holds the
    /// key ingress fetched for the request.
    pub fn verify_serving(
        &self,
        request: &hookinbox_verify::Request<'_>,
        now: i64,
        fetched: &dyn FetchedKeys,
    ) -> Result<Verified, NotVerified> {
        let verifier = self.verifier();
        if !verifier.adapter().fetches_keys() && verifier.keys().active(now).next().is_none() {
            return Err(NotVerified::NoActiveSecret);
        }
        self.verify_with(&verifier, request, now, fetched)
            .map_err(NotVerified::Refused)
    }

    /// For a provider whose event id is not signed, its redelivery window in
    /// milliseconds: inside it, the same body under another id is the same
    /// event (see `NewEvent::fingerprint_window_ms`). `None` when the id is
    /// signed.
    pub fn fingerprint_window_ms(&self) -> Option<i64> {
        let verifier = self.verifier();
        let adapter = verifier.adapter();
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

    /// Which of the endpoint's targets `event` goes to (one delivery row
    /// each), and which not.
    pub fn route(&self, event: &RoutedEvent<'_>) -> RoutingDecision {
        RoutingDecision::route(
            self.targets.iter().map(|t| (t.name.as_str(), &t.route)),
            event,
        )
    }

    /// The `delay` of each target that has one, in milliseconds: when a
    /// new event's delivery rows are first due (`NewEvent::delays_ms`).
    pub fn target_delays_ms(&self) -> BTreeMap<String, i64> {
        self.targets
            .iter()
            .filter_map(|t| Some((t.name.clone(), t.flow.delay_ms()?)))
            .collect()
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
        let pointers = [id_pointer.as_str(), version_pointer.as_str()];
        let Ok(json) = hookinbox_verify::envelope::JsonFields::read(body, &pointers) else {
            return;
        };
        envelope.object_id = json.string_at(id_pointer);
        envelope.object_version = json.integer_at(version_pointer);
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

/// Why ingress did not verify a request.
#[derive(Debug)]
pub enum NotVerified {
    /// The endpoint has no secret version in its window: nothing could be.
    NoActiveSecret,
    /// Verification refused the request.
    Refused(Failure),
}

/// The verifier of an endpoint's settings: its adapter, and the key ring
/// read from its secret versions' sources, then the `learned` ones.
fn build_verifier(
    settings: &config::Endpoint,
    index: usize,
    learned: Vec<SecretInput>,
) -> Result<Verifier, ConfigError> {
    let field = |name: &str| format!("endpoint[{index}].{name}");
    // The settings built this adapter once already: it cannot fail now,
    // but if it did the message would still name the field.
    let adapter = adapter_for(settings.provider, &settings.adapter_settings())
        .map_err(|e| ConfigError::invalid(field("provider"), e.to_string()))?;
    let mut secrets = Vec::with_capacity(settings.secrets.len());
    for (n, secret) in settings.secrets.iter().enumerate() {
        let value_field = field(&format!("secret[{n}].value"));
        secret_rules::warn_if_shared(&secret.value, &value_field);
        let value = secret.value.read(&value_field)?;
        // An undecodable secret is the verifier's error to report, below.
        if let Ok(key) = adapter.parse_key(value.expose_secret()) {
            secret_rules::check_length(&key, &value, &secret.value, &value_field)?;
        }
        secrets.push(SecretInput {
            version: secret.version.clone(),
            value,
            not_before: secret.not_before,
            not_after: secret.not_after,
        });
    }
    secrets.extend(learned);
    Ok(Verifier::new(adapter, secrets)
        .map_err(|e| ConfigError::invalid(field("secret"), e.to_string()))?
        .with_tolerance_seconds(settings.tolerance_seconds())
        .with_allowed_types(settings.event_types.clone()))
}

/// Every endpoint by id.
pub type Endpoints = HashMap<String, Arc<Endpoint>>;

/// Builds every endpoint of a configuration; the first error stops start-up.
pub fn build_all(settings: &Settings) -> Result<Endpoints, ConfigError> {
    settings
        .endpoints
        .iter()
        .enumerate()
        .map(|(index, endpoint)| {
            Endpoint::build(endpoint, index, settings.delivery.lease)
                .map(|built| (built.id.clone(), Arc::new(built)))
        })
        .collect()
}
