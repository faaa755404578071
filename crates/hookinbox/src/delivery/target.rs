//! A delivery target at run time: where events go, its retry budget, its
//! concurrency, and the wake-up the ingress pokes when it accepts an event.

use std::sync::Arc;
use std::time::Duration;

use hookinbox_verify::{Adapter, Key};
use secrecy::ExposeSecret;
use tokio::sync::Notify;

use super::destination::Destination;
use super::http_target::HttpTarget;
use super::mqtt_target::MqttTarget;
use super::nats_target::NatsTarget;
use super::rabbitmq_target::RabbitmqTarget;
use super::redis_stream_target::RedisStreamTarget;
use super::reshape::Reshape;
use super::retry_policy::RetryPolicy;
use crate::config::{self, ConfigError, FlowControl, HttpDestination, TargetKind};
use crate::routing::TargetRoute;
use crate::tls::client::TrustRoots;
use crate::transform::{Limits, TransformScript};

/// How events reach the target.
#[derive(Debug)]
pub enum Sender {
    /// Built from the configuration: an `http` target (its client and
    /// signing key) or a `nats` one (its client connects at the first
    /// attempt).
    Ready(Arc<dyn Destination>),
    /// A library handler: the embedding program registers it under the
    /// target's name, and `delivery::spawn` binds it to the store it
    /// commits through — or refuses to start the workers. A worker is only
    /// ever given a [`Destination`], so it cannot hold an unbound handler.
    Handler,
}

#[derive(Debug)]
pub struct Target {
    pub endpoint_id: String,
    pub name: String,
    pub sender: Sender,
    pub policy: RetryPolicy,
    pub concurrency: usize,
    /// Which events it gets (`event_types`, `filter`).
    pub route: TargetRoute,
    /// What it is sent of each event (`transform`, `body`).
    pub reshape: Reshape,
    /// `delay`, `rate_limit`, `circuit_breaker`.
    pub flow: FlowControl,
    /// How long a lease lasts; the worker heartbeats at a third of it.
    pub lease: Duration,
    /// Poked by the ingress after a commit, so idle workers start at once
    /// instead of at their next poll.
    pub wakeup: Notify,
}

impl Target {
    /// Builds a target from its checked settings: reads its secret, CA
    /// file, NATS credentials file or MQTT password. `field` names it in errors (`endpoint[0].target[1]`).
    pub fn build(
        endpoint_id: &str,
        settings: &config::Target,
        field: &str,
        lease: Duration,
    ) -> Result<Target, ConfigError> {
        let (sender, lease) = match &settings.kind {
            TargetKind::Handler => (Sender::Handler, lease),
            // An HTTP or NATS attempt may take its whole timeout: the lease
            // outlasts it. (A handler runs inside one commit; no timeout applies.)
            TargetKind::Http(destination) => (
                Sender::Ready(Arc::new(http_sender(destination, field)?)),
                lease.max(destination.timeout * 2),
            ),
            TargetKind::Nats(destination) => (
                Sender::Ready(Arc::new(NatsTarget::new(destination, field)?)),
                lease.max(destination.timeout * 2),
            ),
            TargetKind::Rabbitmq(destination) => (
                Sender::Ready(Arc::new(RabbitmqTarget::new(destination, field)?)),
                lease.max(destination.timeout * 2),
            ),
            TargetKind::RedisStream(destination) => (
                Sender::Ready(Arc::new(RedisStreamTarget::new(destination, field)?)),
                lease.max(destination.timeout * 2),
            ),
            TargetKind::Mqtt(destination) => (
                Sender::Ready(Arc::new(MqttTarget::new(
                    destination,
                    settings.concurrency.get(),
                    field,
                )?)),
                lease.max(destination.timeout * 2),
            ),
        };
        Ok(Target {
            endpoint_id: endpoint_id.to_owned(),
            name: settings.name.clone(),
            sender,
            policy: RetryPolicy {
                max_attempts: settings.max_attempts.get(),
                max_age_ms: millis(settings.max_age),
                base_ms: millis(settings.retry_base),
                cap_ms: millis(settings.retry_cap),
            },
            concurrency: settings.concurrency.get(),
            route: settings.route.clone(),
            reshape: reshape(endpoint_id, settings, field)?,
            flow: settings.flow.clone(),
            lease,
            wakeup: Notify::new(),
        })
    }
}

/// `transform` (read and compiled once here, to refuse a script that
/// cannot serve before the service starts) and `body`.
fn reshape(
    endpoint_id: &str,
    settings: &config::Target,
    field: &str,
) -> Result<Reshape, ConfigError> {
    let transform = match &settings.transform {
        Some(path) => Some(Arc::new(
            TransformScript::load(
                path,
                &format!("{endpoint_id}/{}", settings.name),
                Limits::DEFAULT,
            )
            .map_err(|why| {
                ConfigError::invalid(
                    format!("{field}.transform"),
                    format!("target `{}`: {why}", settings.name),
                )
            })?,
        )),
        None => None,
    };
    let url = match &settings.kind {
        TargetKind::Http(destination) => destination.url.to_string(),
        _ => String::new(),
    };
    Ok(Reshape {
        transform,
        body: settings.body,
        url,
    })
}

/// The HTTP client of an `http` target, signing with its secret.
fn http_sender(destination: &HttpDestination, field: &str) -> Result<HttpTarget, ConfigError> {
    let secret_field = format!("{field}.secret");
    let secret = destination.secret.read(&secret_field)?;
    // The same decoding the internal app's Standard Webhooks library applies.
    let key = hookinbox_verify::providers::standard::STANDARD
        .parse_key(secret.expose_secret())
        .map_err(|e| {
            ConfigError::invalid(
                destination.secret.field_name(&secret_field),
                format!("expected a whsec_ secret: {e}"),
            )
        })?;
    let Key::Hmac(key) = key else {
        return Err(ConfigError::invalid(
            destination.secret.field_name(&secret_field),
            "expected a whsec_ (HMAC) secret, not a public key",
        ));
    };
    let url = destination.url.clone();
    if !destination.is_https() {
        return Ok(HttpTarget::new(url, destination.timeout, key));
    }
    let roots = match &destination.ca_file {
        Some(path) => TrustRoots::from_ca_file(path, &format!("{field}.ca_file"))?,
        None => TrustRoots::Mozilla,
    };
    HttpTarget::with_tls(url, destination.timeout, key, roots).map_err(|e| {
        ConfigError::invalid(format!("{field}.url"), format!("cannot set up TLS: {e}"))
    })
}

/// Milliseconds, as the retry policy counts; durations past `i64::MAX` ms
/// (292 million years) are that.
fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}
