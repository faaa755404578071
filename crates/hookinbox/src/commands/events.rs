//! `hookinbox events list|show|replay`

use std::io::Write;

use anyhow::{bail, Context};
use base64::Engine;
use hookinbox_store::{EventFilter, InboxStatus, ReplaySelector};
use serde_json::json;

use super::event_text;
use super::output::note;
use crate::cli::EventsCommand;
use crate::config;
use crate::{clock, storage};

/// Prints to `out`; returns `false` when the asked-for event does not exist.
pub async fn run(command: EventsCommand, out: &mut impl Write) -> anyhow::Result<bool> {
    match command {
        EventsCommand::List {
            config,
            status,
            endpoint,
            limit,
            json,
        } => {
            let config = config::load(&config)?;
            let reader = storage::open_reader(&config.storage, &config.encryption).await?;
            let filter = EventFilter {
                status: status.as_deref().map(parse_status).transpose()?,
                endpoint_id: endpoint,
                limit,
                ..EventFilter::default()
            };
            let events = reader.list_events(&filter).await?.events;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&events)?)?;
            } else {
                writeln!(
                    out,
                    "{:<38} {:<16} {:<10} {:<28} TYPE",
                    "ID", "ENDPOINT", "STATUS", "EVENT ID"
                )?;
                for e in &events {
                    writeln!(
                        out,
                        "{:<38} {:<16} {:<10} {:<28} {}",
                        e.id,
                        e.endpoint_id,
                        e.status,
                        e.provider_event_id,
                        e.event_type.as_deref().unwrap_or("")
                    )?;
                }
            }
            out.flush()?;
            Ok(true)
        }
        EventsCommand::Show {
            config,
            id,
            payload,
            json,
        } => {
            let config = config::load(&config)?;
            let reader = storage::open_reader(&config.storage, &config.encryption).await?;
            let Some((detail, raw)) = reader.show_event(&id, payload).await? else {
                note!("no event {id}");
                return Ok(false);
            };
            if json {
                let mut value = serde_json::to_value(&detail)?;
                // The headers kept for audit (see `ingress::audit_headers`):
                // what a re-verification with `hookinbox verify` needs.
                let headers = reader.audit_headers(&id).await?.unwrap_or_default();
                value["headers"] = json!(headers
                    .iter()
                    .map(|(name, value)| json!({"name": name, "value": value}))
                    .collect::<Vec<_>>());
                if payload {
                    value["payload_base64"] = json!(raw
                        .as_ref()
                        .map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes)));
                }
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
            } else {
                event_text::write_event(out, &detail)?;
                if payload {
                    if let Some(raw) = raw {
                        writeln!(out, "\npayload")?;
                        out.write_all(&raw)?;
                        writeln!(out)?;
                    }
                }
            }
            out.flush()?;
            Ok(true)
        }
        EventsCommand::Replay {
            config,
            id,
            status,
            since,
            json,
        } => {
            let config = config::load(&config)?;
            let selector = match (id, status.as_deref()) {
                (Some(inbox_id), None) => ReplaySelector::One { inbox_id },
                (None, Some(status)) => {
                    if parse_status(status)? != InboxStatus::Failed {
                        bail!("--status: only `failed` events can be replayed in bulk");
                    }
                    ReplaySelector::Failed {
                        since_ms: since.map(|s| s.saturating_mul(1000)),
                    }
                }
                _ => bail!("give an event id or --status failed"),
            };
            let store = storage::open(&config.storage, &config.encryption)
                .await?
                .shared();
            let replayed = store
                .replay(selector, clock::unix_millis())
                .await
                .context("replay")?;
            if json {
                writeln!(out, "{}", json!({"replayed": replayed}))?;
            } else {
                writeln!(out, "replayed {} event(s)", replayed.len())?;
                for id in &replayed {
                    writeln!(out, "{id}")?;
                }
            }
            out.flush()?;
            Ok(true)
        }
    }
}

fn parse_status(text: &str) -> anyhow::Result<InboxStatus> {
    InboxStatus::parse(&text.to_ascii_uppercase())
        .with_context(|| format!("--status `{text}`: expected accepted, processed or failed"))
}
