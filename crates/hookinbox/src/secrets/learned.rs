//! Secrets a provider handed over in a handshake (Asana's `X-Hook-Secret`,
//! Notion's verification token; `hookinbox_verify::handover`), as an
//! endpoint holds them: versions `learned-{n}` of its key ring beside the
//! configured ones. The store keeps them sealed (`hookinbox_store::
//! learned_secrets`), so every process of a shared database can verify with
//! them: a process reads them when it first needs them, right after it took
//! a handover itself, and again at most every [`REFRESH_INTERVAL`] while
//! requests come, so a secret another process took is in use within
//! seconds (a request refused before that is retried by the provider).

use std::sync::{Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use hookinbox_store::{LearnedSecret, Store, StoreError};
use hookinbox_verify::{ExposeSecret, SecretInput, SecretString};

use crate::endpoint::Endpoint;

/// How often a process reads an endpoint's learned secrets again.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(5);

/// The version name of learned secret `number`.
pub fn version_name(number: i64) -> String {
    format!("learned-{number}")
}

/// An endpoint's learned secrets, as last read.
#[derive(Default)]
pub struct LearnedVersions {
    versions: RwLock<Vec<(String, SecretString)>>,
    read_at: Mutex<Option<Instant>>,
}

impl LearnedVersions {
    /// The learned versions as key-ring inputs.
    pub fn inputs(&self) -> Vec<SecretInput> {
        self.versions
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(version, value)| SecretInput {
                version: version.clone(),
                value: SecretString::from(value.expose_secret().to_owned()),
                not_before: None,
                not_after: None,
            })
            .collect()
    }

    /// Puts `learned` in place of what was read before, at `now`.
    pub fn replace(&self, learned: &[LearnedSecret], now: Instant) {
        let versions = learned
            .iter()
            .map(|secret| {
                (
                    version_name(secret.number),
                    SecretString::from(secret.secret.expose_secret().to_owned()),
                )
            })
            .collect();
        *self
            .versions
            .write()
            .unwrap_or_else(PoisonError::into_inner) = versions;
        *self.read_at.lock().unwrap_or_else(PoisonError::into_inner) = Some(now);
    }

    /// Whether they are due to be read again at `now`.
    fn due(&self, now: Instant) -> bool {
        self.read_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none_or(|read_at| now.saturating_duration_since(read_at) >= REFRESH_INTERVAL)
    }
}

/// Reads `endpoint`'s learned secrets from `store` when they are due (or
/// `now_needed`: right after a handover) and puts them in its key ring.
/// Nothing for an endpoint whose provider hands over no secret.
pub async fn refresh(
    store: &std::sync::Arc<dyn Store>,
    endpoint: &Endpoint,
    now_needed: bool,
) -> Result<(), StoreError> {
    if !endpoint.learns_secrets() || !(now_needed || endpoint.learned().due(Instant::now())) {
        return Ok(());
    }
    let Some(learned_secrets) = std::sync::Arc::clone(store).learned_secrets() else {
        return Ok(());
    };
    let learned = learned_secrets.learned(&endpoint.id).await?;
    endpoint.use_learned(&learned, Instant::now());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learned(number: i64, secret: &str) -> LearnedSecret {
        LearnedSecret {
            number,
            learned_at_ms: 0,
            fingerprint: String::new(),
            secret: SecretString::from(secret.to_owned()),
        }
    }

    #[test]
    fn versions_are_named_by_number_and_read_again_after_the_interval() {
        let versions = LearnedVersions::default();
        let start = Instant::now();
        assert!(versions.due(start));
        versions.replace(&[learned(1, "a"), learned(3, "b")], start);
        let names: Vec<String> = versions.inputs().into_iter().map(|i| i.version).collect();
        assert_eq!(names, ["learned-1", "learned-3"]);
        assert!(!versions.due(start + REFRESH_INTERVAL - Duration::from_millis(1)));
        assert!(versions.due(start + REFRESH_INTERVAL));
    }
}
