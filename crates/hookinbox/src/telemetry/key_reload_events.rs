//! Key reloads (SIGHUP, `hookinbox keys reload`): what failed, by field.

use crate::config::ConfigError;

/// A secret version (or the configuration file) that could not be read on
/// a key reload: the key ring in use stays. Logged at WARN with the error,
/// which names the field and never the value, and counted.
pub struct SecretReloadFailed<'a> {
    /// The endpoint whose ring stays, or `None` when the file itself could
    /// not be read (every ring stays).
    pub endpoint: Option<&'a str>,
    pub error: &'a ConfigError,
}

impl SecretReloadFailed<'_> {
    pub fn emit(self) {
        tracing::warn!(
            message = "Secrets not reloaded; the key ring in use stays.",
            endpoint = self.endpoint.unwrap_or("*"),
            error = %self.error
        );
        metrics::counter!("hookinbox_secret_reload_failures_total").increment(1);
    }
}
