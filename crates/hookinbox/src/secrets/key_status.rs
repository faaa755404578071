//! What `hookinbox keys status` shows (served as `GET /admin/keys`): each
//! endpoint's secret versions in the key ring in use, their validity
//! windows, whether each is inside its window now, and how many requests
//! each verified in the last 24 hours. The counts are this process's, since
//! it started (see [`crate::secrets::secret_matches`]). A version a reload removed
//! from the ring is still listed, `in_ring: false`, while it has matches in
//! the last 24 hours: after a retirement the operator still sees how much
//! traffic it had.

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
    /// In the key ring in use; `false`: removed by a reload (then no
    /// window is shown and it is not active).
    #[serde(default = "in_ring_by_default")]
    pub in_ring: bool,
}

fn in_ring_by_default() -> bool {
    true
}

impl KeysStatus {
    /// The key rings in use at `now`.
    pub fn of(endpoints: &Endpoints, now: i64) -> KeysStatus {
        let mut endpoints: Vec<EndpointKeys> = endpoints
            .values()
            .map(|endpoint| {
                let verifier = endpoint.verifier();
                let mut versions: Vec<VersionStatus> = verifier
                    .keys()
                    .versions()
                    .iter()
                    .map(|v| VersionStatus {
                        version: v.version.clone(),
                        not_before: v.not_before,
                        not_after: v.not_after,
                        active: v.is_active(now),
                        matches_24h: endpoint.matches_last_24h(&v.version, now),
                        in_ring: true,
                    })
                    .collect();
                for (version, matches_24h) in endpoint.all_matches_last_24h(now) {
                    if !versions.iter().any(|v| v.version == version) {
                        versions.push(VersionStatus {
                            version,
                            not_before: None,
                            not_after: None,
                            active: false,
                            matches_24h,
                            in_ring: false,
                        });
                    }
                }
                EndpointKeys {
                    id: endpoint.id.clone(),
                    provider: endpoint.provider.to_owned(),
                    versions,
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
                    match (v.in_ring, v.active) {
                        (false, _) => "removed",
                        (true, true) => "yes",
                        (true, false) => "no",
                    },
                    v.matches_24h
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config;

    const VERSION: &str =
        "[[endpoint.secret]]\nversion = \"{v}\"\nvalue = \"a-lab-secret-long-enough-{v}\"\n";

    fn settings(versions: &[&str]) -> config::Settings {
        let secrets: String = versions.iter().map(|v| VERSION.replace("{v}", v)).collect();
        let text = format!(
            "[encryption]\nallow_plaintext = true\n[[endpoint]]\nid = \"lab\"\nprovider = \"lab\"\n{secrets}"
        );
        config::parse(&text, Path::new("/")).unwrap()
    }

    fn listed(status: &KeysStatus) -> Vec<(&str, bool, bool, u64)> {
        status.endpoints[0]
            .versions
            .iter()
            .map(|v| (v.version.as_str(), v.in_ring, v.active, v.matches_24h))
            .collect()
    }

    #[test]
    fn a_version_removed_by_a_reload_keeps_its_counts_for_24_hours() {
        let endpoints = crate::endpoint::build_all(&settings(&["old", "new"])).unwrap();
        let endpoint = &endpoints["lab"];
        let now = 1_700_000_000;
        endpoint.record_match("old", now);
        endpoint.record_match("old", now);
        endpoint.record_match("new", now);
        assert_eq!(
            listed(&KeysStatus::of(&endpoints, now)),
            [("old", true, true, 2), ("new", true, true, 1)]
        );

        endpoint
            .replace_secrets(&settings(&["new"]).endpoints[0].secrets, 0)
            .unwrap();
        let after = KeysStatus::of(&endpoints, now + 60);
        assert_eq!(
            listed(&after),
            [("new", true, true, 1), ("old", false, false, 2)]
        );
        let mut table = Vec::new();
        after.write_table(&mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("lab") && l.contains(" old ") && l.contains("removed")),
            "{table}"
        );
        // A day later its matches have aged out, and so has its line.
        assert_eq!(
            listed(&KeysStatus::of(&endpoints, now + 24 * 3600)),
            [("new", true, true, 0)]
        );
    }
}
