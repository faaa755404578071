//! Secret rotation without a restart: a key reload re-reads every
//! endpoint's `[[endpoint.secret]]` versions, from the configuration file
//! (so versions added or removed there apply) and from their sources
//! (`value_env`, `value_file`), and swaps each endpoint's key ring whole.
//!
//! It runs on SIGHUP ([`crate::reload`]) and on `POST /admin/keys/reload`
//! (`hookinbox keys reload`). A request verifies with the ring it took when
//! it started, so a swap never fails one in flight.
//!
//! Only secret versions change. Anything else that differs in the file
//! applies after a restart, and the reload says so with a WARN. A source
//! that cannot be read keeps that endpoint's ring in use, is logged naming
//! the field (never the value), counted in
//! `hookinbox_secret_reload_failures_total`, and makes `/readyz` name the
//! failing check `secrets` until a reload succeeds.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::config::{self, ConfigError, Settings};
use crate::endpoint::Endpoints;
use crate::reload::Reloadable;
use crate::telemetry::{SecretReloadFailed, SecretVersionsInUse};

/// Reloads the key rings of a running service's endpoints.
pub struct KeyReloader {
    /// The file to re-read; `None` (settings given by an embedding
    /// program): the running secret versions' sources are re-read.
    config_path: Option<PathBuf>,
    /// The settings the service started with.
    running: Settings,
    endpoints: Endpoints,
    /// Whether the last reload left a ring it could not replace.
    failing: AtomicBool,
    /// One reload at a time (a SIGHUP and an admin request may cross).
    one_at_a_time: Mutex<()>,
}

/// What one reload did.
#[derive(Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReloadReport {
    /// Endpoints whose key ring was replaced.
    pub reloaded: Vec<String>,
    /// What could not be read: the field and why (never a value). Those
    /// endpoints keep the ring in use.
    pub failed: Vec<String>,
    /// The file changes something besides secret versions, which applies
    /// only after a restart.
    pub restart_needed: bool,
}

impl KeyReloader {
    pub fn new(config_path: Option<PathBuf>, running: Settings, endpoints: Endpoints) -> Self {
        KeyReloader {
            config_path,
            running,
            endpoints,
            failing: AtomicBool::new(false),
            one_at_a_time: Mutex::new(()),
        }
    }

    /// The endpoints whose rings it reloads.
    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// Whether the last reload kept a ring because a source could not be
    /// read (`/readyz` names it `secrets`).
    pub fn failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }

    /// Re-reads the secret versions and swaps every ring that can be
    /// replaced. Blocking: it reads files.
    pub fn reload_keys(&self) -> ReloadReport {
        let _one = self
            .one_at_a_time
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut report = ReloadReport::default();
        let loaded = match &self.config_path {
            Some(path) => config::load(path),
            None => Ok(self.running.clone()),
        };
        let settings = match loaded {
            Ok(settings) => settings,
            Err(error) => {
                SecretReloadFailed {
                    endpoint: None,
                    error: &error,
                }
                .emit();
                report.failed.push(error.to_string());
                self.failing.store(true, Ordering::Relaxed);
                return report;
            }
        };
        report.restart_needed = !same_but_secrets(&self.running, &settings);
        if report.restart_needed {
            tracing::warn!(
                message = "The configuration file changes more than [[endpoint.secret]] versions; those changes are ignored until a restart."
            );
        }
        let mut ids: Vec<&String> = self.endpoints.keys().collect();
        ids.sort();
        for id in ids {
            let Some((index, new)) = settings.endpoint(id) else {
                // Reported by `restart_needed`: the endpoint keeps serving.
                continue;
            };
            match self.endpoints[id].replace_secrets(&new.secrets, index) {
                Ok(()) => report.reloaded.push(id.clone()),
                Err(error) => {
                    SecretReloadFailed {
                        endpoint: Some(id),
                        error: &error,
                    }
                    .emit();
                    report.failed.push(error.to_string());
                }
            }
        }
        self.failing
            .store(!report.failed.is_empty(), Ordering::Relaxed);
        SecretVersionsInUse(&self.endpoints).emit();
        if report.failed.is_empty() {
            tracing::info!(
                message = "Secrets reloaded.",
                endpoints = report.reloaded.len()
            );
        }
        report
    }
}

impl Reloadable for KeyReloader {
    fn reload(&self) {
        let _ = self.reload_keys();
    }
}

/// Whether two configurations are the same once their endpoints' secret
/// versions are set aside. `server.listen` is not compared: `serve
/// --listen` overrides it. Inline secrets elsewhere (a target's, the admin
/// token) serialize redacted, so a change to one of them is not seen here.
fn same_but_secrets(running: &Settings, new: &Settings) -> bool {
    let shape = |settings: &Settings| -> Result<serde_json::Value, ConfigError> {
        let mut settings = settings.clone();
        settings.server.listen = running.server.listen;
        for endpoint in &mut settings.endpoints {
            endpoint.secrets.clear();
        }
        serde_json::to_value(&settings)
            .map_err(|error| ConfigError::invalid("*", error.to_string()))
    };
    match (shape(running), shape(new)) {
        (Ok(running), Ok(new)) => running == new,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookinbox_testing::TestConfig;

    fn settings(dir: &std::path::Path, extra: &str) -> Settings {
        let text = TestConfig::new(&dir.join("inbox.db"))
            .extra(extra)
            .to_string();
        config::parse(&text, dir).expect("valid")
    }

    #[test]
    fn secret_versions_are_set_aside_and_other_changes_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let running = settings(dir.path(), "");
        let mut rotated = running.clone();
        rotated.endpoints[0].secrets[0].not_after = Some(1);
        assert!(same_but_secrets(&running, &rotated));
        let mut listening = running.clone();
        listening.server.listen = "127.0.0.1:1".parse().unwrap();
        assert!(same_but_secrets(&running, &listening));
        let more = settings(dir.path(), "[server]\nmax_connections = 7");
        assert!(!same_but_secrets(&running, &more));
    }

    #[test]
    fn an_unreadable_source_keeps_the_ring_and_is_reported_by_field() {
        let dir = tempfile::tempdir().unwrap();
        let secret_file = dir.path().join("lab.secret");
        std::fs::write(&secret_file, "a-secret-of-enough-length").unwrap();
        let config_path = dir.path().join("hookinbox.toml");
        let write = |source: &str| {
            let text = format!(
                "[storage]\nurl = \"sqlite://{}\"\n[[endpoint]]\nid = \"e\"\nprovider = \"lab\"\n[[endpoint.secret]]\nversion = \"v1\"\n{source}\n",
                dir.path().join("inbox.db").display()
            );
            std::fs::write(&config_path, text).unwrap();
        };
        write(&format!("value_file = \"{}\"", secret_file.display()));
        let running = config::load(&config_path).unwrap();
        let endpoints = crate::endpoint::build_all(&running).unwrap();
        let reloader = KeyReloader::new(Some(config_path.clone()), running, endpoints.clone());

        let report = reloader.reload_keys();
        assert_eq!(report.reloaded, ["e"]);
        assert!(!reloader.failing());

        let before = endpoints["e"].verifier();
        std::fs::remove_file(&secret_file).unwrap();
        let report = reloader.reload_keys();
        assert!(report.reloaded.is_empty());
        assert_eq!(report.failed.len(), 1);
        assert!(
            report.failed[0].contains("endpoint[0].secret[0]"),
            "{report:?}"
        );
        assert!(reloader.failing());
        assert!(std::sync::Arc::ptr_eq(&before, &endpoints["e"].verifier()));
    }
}
