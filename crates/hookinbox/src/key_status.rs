//! What `hookinbox keys status` shows (served as `GET /admin/keys`): each
//! endpoint's secret versions in the key ring in use, their validity
//! windows, whether each is inside its window now, and how many requests
//! each verified in the last 24 hours. The counts are this process's, since
//! it started (see [`crate::secret_matches`]).

use serde::{Deserialize, Serialize};

use crate::endpoint::Endpoints;

/// Every endpoint's key ring, at `now`.
#[derive(Debug, Serialize, Deserialize)]
pub struct KeysStatus {
    /// Unix seconds the report was made at.
    pub now: i64,
    /// By endpoint id.
    pub endpoints: Vec<EndpointKeys>,
}

/// One endpoint's key ring.
#[derive(Debug, Serialize, Deserialize)]
pub struct EndpointKeys {
    pub id: String,
    pub provider: String,
    /// In the ring's order of preference.
    pub versions: Vec<VersionStatus>,
}

/// One secret version: never its value.
#[derive(Debug, Serialize, Deserialize)]
pub struct VersionStatus {
    pub version: String,
    pub not_before: Option<i64>,
    pub not_after: Option<i64>,
    /// Inside its window at `now`: requests are checked against it.
    pub active: bool,
    /// Requests it verified in this process in the 24 hours up to `now`.
    pub matches_24h: u64,
}

impl KeysStatus {
    /// The key rings in use at `now`.
    pub fn of(endpoints: &Endpoints, now: i64) -> KeysStatus {
        let mut endpoints: Vec<EndpointKeys> = endpoints
            .values()
            .map(|endpoint| {
                let verifier = endpoint.verifier();
                EndpointKeys {
                    id: endpoint.id.clone(),
                    provider: endpoint.provider.to_owned(),
                    versions: verifier
                        .keys()
                        .versions()
                        .iter()
                        .map(|v| VersionStatus {
                            version: v.version.clone(),
                            not_before: v.not_before,
                            not_after: v.not_after,
                            active: v.is_active(now),
                            matches_24h: endpoint.matches_last_24h(&v.version, now),
                        })
                        .collect(),
                }
            })
            .collect();
        endpoints.sort_by(|a, b| a.id.cmp(&b.id));
        KeysStatus { now, endpoints }
    }

    /// The table `keys status` prints.
    pub fn write_table(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{:<16} {:<12} {:<12} {:<12} {:<7} MATCHES_24H",
            "ENDPOINT", "VERSION", "NOT_BEFORE", "NOT_AFTER", "ACTIVE"
        )?;
        let bound = |at: Option<i64>| at.map_or_else(|| "-".to_owned(), |at| at.to_string());
        for endpoint in &self.endpoints {
            for v in &endpoint.versions {
                writeln!(
                    out,
                    "{:<16} {:<12} {:<12} {:<12} {:<7} {}",
                    endpoint.id,
                    v.version,
                    bound(v.not_before),
                    bound(v.not_after),
                    if v.active { "yes" } else { "no" },
                    v.matches_24h
                )?;
            }
        }
        Ok(())
    }
}
