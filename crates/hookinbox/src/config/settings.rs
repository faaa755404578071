//! The configuration after every check: what the rest of the service builds
//! from. Each field's type holds only values that work (`NonZero*`,
//! `Duration`, a parsed `Uri`, `IpNet`s, a [`SecretSource`]), and rules
//! between fields are in the shapes (an `http` target has a URL, a handler
//! has none), so builders take these settings as they are and check
//! nothing again. Secrets are held as their sources; they are read when the
//! service is built.
//!
//! `Serialize` prints them for `hookinbox config check`, under the names the
//! file uses, secrets as sources only.

use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;

use super::admin::Admin;
use super::encryption::Encryption;
use super::endpoint::Endpoint;
use super::file::ConfigFile;
use super::metrics::Metrics;
use super::reconcile::Reconcile;
use super::retention::Retention;
use super::server::Server;
use super::storage::{Delivery, Storage};
use super::telemetry::Telemetry;
use super::ConfigError;

/// A checked configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// `[server]`: the public listener.
    pub server: Server,
    /// `[storage]`: the database.
    pub storage: Storage,
    /// `[delivery]`: the workers, for all targets.
    pub delivery: Delivery,
    /// `[admin]`: metrics and readiness, if configured.
    pub admin: Option<Admin>,
    /// `[encryption]`: the keys that seal bodies at rest.
    pub encryption: Encryption,
    /// `[retention]`: how long data is kept.
    pub retention: Retention,
    /// `[metrics]`: how often the database gauges are sampled.
    pub metrics: Metrics,
    /// `[reconcile]`: the background reconciliation pass.
    pub reconcile: Reconcile,
    /// `[telemetry]`: traces exported over OTLP, if configured.
    pub telemetry: Telemetry,
    /// At least one, ids unique.
    #[serde(rename = "endpoint")]
    pub endpoints: Vec<Endpoint>,
}

impl Settings {
    /// Checks a parsed file; relative paths in it are resolved against `base_dir`.
    pub(super) fn from_file(file: ConfigFile, base_dir: &Path) -> Result<Settings, ConfigError> {
        let server = Server::from_file(file.server, base_dir)?;
        let storage = Storage::from_file(file.storage, base_dir)?;
        let delivery = Delivery::from_file(file.delivery)?;
        let admin = file
            .admin
            .map(|admin| Admin::from_file(admin, base_dir))
            .transpose()?;
        let encryption = Encryption::from_file(file.encryption, base_dir)?;
        let retention = Retention::from_file(file.retention)?;
        let metrics = Metrics::from_file(file.metrics)?;
        let reconcile = Reconcile::from_file(file.reconcile)?;
        let telemetry = Telemetry::from_file(file.telemetry)?;
        if file.endpoint.is_empty() {
            return Err(ConfigError::invalid(
                "endpoint",
                "at least one [[endpoint]] is required",
            ));
        }
        let mut ids = HashSet::new();
        let mut endpoints = Vec::with_capacity(file.endpoint.len());
        for (index, endpoint) in file.endpoint.into_iter().enumerate() {
            if !ids.insert(endpoint.id.clone()) {
                return Err(ConfigError::invalid(
                    format!("endpoint[{index}].id"),
                    format!("`{}` is used by two endpoints", endpoint.id),
                ));
            }
            let endpoint = Endpoint::from_file(endpoint, index, base_dir)?;
            if endpoint.learns_secrets() && encryption.keys.is_empty() {
                return Err(ConfigError::invalid(
                    format!("endpoint[{index}].provider"),
                    format!(
                        "`{}` hands its signing secret over in a handshake, which is kept \
                         sealed: it needs an [[encryption.key]]",
                        endpoint.provider
                    ),
                ));
            }
            endpoints.push(endpoint);
        }
        Ok(Settings {
            server,
            storage,
            delivery,
            admin,
            encryption,
            retention,
            metrics,
            reconcile,
            telemetry,
            endpoints,
        })
    }

    /// The endpoint with this id, and its index (for field names).
    pub fn endpoint(&self, id: &str) -> Option<(usize, &Endpoint)> {
        self.endpoints.iter().enumerate().find(|(_, e)| e.id == id)
    }
}
