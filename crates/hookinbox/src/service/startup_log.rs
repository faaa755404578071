//! What a starting service tells its operator: each endpoint it serves,
//! and (for scripts) the address it listens on.

use std::io::Write;

use crate::config;

/// One line per endpoint at start-up, so an operator sees what is served
/// where and what it delivers to (secret versions by name only).
pub(super) fn endpoint_ready(endpoint: &config::Endpoint) {
    let versions: Vec<&str> = endpoint
        .secrets
        .iter()
        .map(|secret| secret.version.as_str())
        .collect();
    let targets: Vec<String> = endpoint
        .targets
        .iter()
        .map(|target| format!("{} ({})", target.name, target.kind.name()))
        .collect();
    tracing::info!(
        message = "Endpoint ready.",
        path = %format!("/hooks/{}", endpoint.id),
        provider = %endpoint.provider,
        secret_versions = %versions.join(", "),
        targets = %if targets.is_empty() { "none".to_owned() } else { targets.join(", ") }
    );
}

/// The one line on stdout: scripts and tests read the bound address from
/// it. A stdout that cannot be written (its reader already gone) is no
/// reason to stop: serving is what was asked for, and the log line
/// "Serving." gives the address too.
pub(super) fn announce(url: &str) {
    let mut stdout = std::io::stdout().lock();
    let written = writeln!(stdout, "hookinbox listening on {url}").and_then(|()| stdout.flush());
    if let Err(error) = written {
        tracing::warn!(message = "The address could not be printed on stdout.", %url, %error);
    }
}
