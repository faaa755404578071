//! `hookinbox endpoints handshake ENDPOINT`: the secrets an endpoint's
//! provider handed over in its handshake (docs/architecture.md §3, "Secrets
//! a provider hands over"), read from the database as any process of the
//! service reads them. The operator reads Notion's verification token here
//! (`--reveal`) to paste it back into Notion: it is printed on stdout, never
//! logged, and without `--reveal` only its fingerprint is shown.

use std::io::Write;

use anyhow::{bail, Context};
use hookinbox_verify::ExposeSecret;
use serde::Serialize;

use crate::cli::EndpointsCommand;
use crate::commands::event_text::date_ms;
use crate::secrets::learned::version_name;
use crate::{config, storage};

/// One learned secret as printed.
#[derive(Debug, Serialize)]
struct LearnedLine {
    version: String,
    learned_at_ms: i64,
    /// `sha256:` and the first 16 hex digits of the secret's SHA-256.
    fingerprint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
}

/// Prints to `out`; `false` when the endpoint has learned no secret yet.
pub async fn run(command: EndpointsCommand, out: &mut impl Write) -> anyhow::Result<bool> {
    match command {
        EndpointsCommand::Handshake {
            config,
            endpoint,
            reveal,
            json,
        } => {
            let config = config::load(&config)?;
            let Some(settings) = config.endpoints.iter().find(|e| e.id == endpoint) else {
                bail!("no endpoint `{endpoint}` in the configuration");
            };
            let opened = storage::open(&config.storage, &config.encryption).await?;
            let learned = opened
                .learned_secrets()
                .learned(&endpoint)
                .await
                .context("read the learned secrets")?;
            let lines: Vec<LearnedLine> = learned
                .iter()
                .map(|secret| LearnedLine {
                    version: version_name(secret.number),
                    learned_at_ms: secret.learned_at_ms,
                    fingerprint: format!(
                        "sha256:{}",
                        secret.fingerprint.get(..16).unwrap_or_default()
                    ),
                    secret: reveal.then(|| secret.secret.expose_secret().to_owned()),
                })
                .collect();
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&lines)?)?;
            } else if lines.is_empty() {
                writeln!(
                    out,
                    "endpoint `{endpoint}` (provider {}): no secret handed over yet",
                    settings.provider
                )?;
            } else {
                for line in &lines {
                    write!(
                        out,
                        "{}  {}  {}",
                        line.version,
                        date_ms(line.learned_at_ms),
                        line.fingerprint
                    )?;
                    match &line.secret {
                        Some(secret) => writeln!(out, "  {secret}")?,
                        None => writeln!(out)?,
                    }
                }
            }
            out.flush()?;
            Ok(!lines.is_empty())
        }
    }
}
