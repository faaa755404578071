//! The configuration file as a whole, exactly as TOML spells it: one field
//! per section. Each section's own struct (`StorageFile`, `TargetFile`, …)
//! sits in the file of its concept, beside the checked type
//! [`super::settings`] turns it into, so a new field is added in one file.
//!
//! Every `*File` struct refuses unknown fields, and every field says what
//! it is for: `hookinbox config example` and docs/configuration.md are
//! tested against these structs. Durations are humantime strings (`"30s"`,
//! `"500ms"`, `"3d"`).
//!
//! An inline secret is parsed straight into a [`secrecy::SecretString`], so
//! every such struct may derive `Debug`: it prints `[REDACTED]` for the
//! value. They derive `Serialize` for `config check`, which prints the file
//! back (`super::printable`): inline secrets are `skip_serializing`, and
//! `storage.url` is written without a password.

use serde::{Deserialize, Serialize};

use super::admin::AdminFile;
use super::encryption::EncryptionFile;
use super::endpoint::EndpointFile;
use super::metrics::MetricsFile;
use super::reconcile::ReconcileFile;
use super::retention::RetentionFile;
use super::server::ServerFile;
use super::storage::{DeliveryFile, StorageFile};
use super::telemetry::TelemetryFile;

/// The whole configuration file.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The public listener: serves `/hooks/*` and `/healthz`.
    #[serde(default)]
    pub server: ServerFile,
    /// Where events are stored.
    #[serde(default)]
    pub storage: StorageFile,
    /// Delivery workers, for all targets.
    #[serde(default)]
    pub delivery: DeliveryFile,
    /// The admin listener (`/metrics`, `/readyz`); off unless configured.
    pub admin: Option<AdminFile>,
    /// The keys that seal bodies and audit headers at rest.
    #[serde(default)]
    pub encryption: EncryptionFile,
    /// How long bodies, dedup records and dead deliveries are kept.
    #[serde(default)]
    pub retention: RetentionFile,
    /// How often the gauges read from the database are sampled.
    #[serde(default)]
    pub metrics: MetricsFile,
    /// Reconciliation: repairing drift between the inbox and its outbox,
    /// and fetching events whose webhook never arrived.
    #[serde(default)]
    pub reconcile: ReconcileFile,
    /// Traces exported over OpenTelemetry's OTLP; off unless configured.
    #[serde(default)]
    pub telemetry: TelemetryFile,
    /// The webhook endpoints, each served at `/hooks/{id}`.
    #[serde(default)]
    pub endpoint: Vec<EndpointFile>,
}
