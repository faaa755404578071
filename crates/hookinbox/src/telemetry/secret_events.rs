//! When the endpoints' secret versions stop verifying:
//! `hookinbox_secret_version_expiry_timestamp_seconds{endpoint,version}`,
//! each version's `not_after` in unix seconds, `+Inf` for a version without
//! one. Recorded at start-up and after every key reload. An alert on
//! `max by (endpoint) (…) - time()` fires before the last version of an
//! endpoint expires (`deploy/prometheus/alerts.yml`), and a version with
//! no end keeps it quiet. The values are configuration, never a secret.

use crate::endpoint::Endpoints;

/// The key rings in use now.
pub struct SecretVersionsInUse<'a>(pub &'a Endpoints);

impl SecretVersionsInUse<'_> {
    pub fn emit(self) {
        for endpoint in self.0.values() {
            let verifier = endpoint.verifier();
            for version in verifier.keys().versions() {
                let expiry = version.not_after.map_or(f64::INFINITY, |at| at as f64);
                metrics::gauge!(
                    "hookinbox_secret_version_expiry_timestamp_seconds",
                    "endpoint" => endpoint.id.clone(), "version" => version.version.clone()
                )
                .set(expiry);
            }
        }
    }
}
