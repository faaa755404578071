//! `hookinbox events list|show|replay`

use std::io::Write;

use anyhow::{bail, Context};
use base64::Engine;
use hookinbox_store::{EventCursor, Store, StoreReads};
use serde_json::json;

use super::event_text;
use super::output::note;
use super::progress::Progress;
use crate::cli::EventsCommand;
use crate::config;
use crate::endpoint;
use crate::event_replay;
use crate::event_selection::EventSelection;
use crate::replay_routing::ReplayRouting;
use crate::{clock, storage};

/// Prints to `out`; returns `false` when the asked-for event does not exist.
pub async fn run(command: EventsCommand, out: &mut impl Write) -> anyhow::Result<bool> {
    match command {
        EventsCommand::List {
            config,
            selection,
            cursor,
            limit,
            json,
        } => {
            let config = config::load(&config)?;
            let reader = storage::open_reader(&config.storage, &config.encryption).await?;
            let mut filter = selection.filter()?;
            filter.limit = limit;
            filter.cursor = match cursor {
                Some(text) => Some(EventCursor::parse(&text).with_context(|| {
                    format!("--cursor `{text}`: not a cursor `events list` printed")
                })?),
                None => None,
            };
            let page = reader.list_events(&filter).await?;
            if let Some(next) = &page.next_cursor {
                note!("more events: --cursor {next}");
            }
            let events = page.events;
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
            selection,
            dry_run,
            target,
            json,
        } => {
            let config = config::load(&config)?;
            // Replay routes against the configuration as it is now
            // (docs/delivery.md, "Replay").
            let endpoints = endpoint::build_all(&config)?;
            let routing = ReplayRouting::new(&endpoints, target.as_deref())?;
            let opened = storage::open(&config.storage, &config.encryption).await?;
            let store = opened.shared();
            let replayed = match (id, selection.is_empty()) {
                (Some(inbox_id), true) if dry_run => {
                    let reads = opened.operator_reads().context("replay")?;
                    let found = reads.show_event(&inbox_id, false).await?.is_some();
                    (Vec::new(), u64::from(found))
                }
                (Some(inbox_id), true) => {
                    let reads = opened.operator_reads().context("replay")?;
                    let found = reads.show_event(&inbox_id, false).await?.is_some();
                    let replayed = event_replay::replay_one(
                        store.as_ref(),
                        reads.as_ref(),
                        &routing,
                        &inbox_id,
                        clock::unix_millis(),
                    )
                    .await
                    .context("replay")?;
                    (replayed, u64::from(found))
                }
                (None, false) => {
                    let reads = opened.operator_reads().context("replay")?;
                    replay_selection(
                        store.as_ref(),
                        reads.as_ref(),
                        &routing,
                        &selection,
                        dry_run,
                    )
                    .await?
                }
                (Some(_), false) => bail!("give an event id or filters, not both"),
                (None, true) => {
                    bail!("give an event id or filters (--status failed, --endpoint, --since, …)")
                }
            };
            let (replayed, matched) = replayed;
            if json {
                writeln!(
                    out,
                    "{}",
                    json!({"replayed": replayed, "matched": matched, "dry_run": dry_run})
                )?;
            } else if dry_run {
                writeln!(
                    out,
                    "{matched} event(s) match; nothing replayed (--dry-run)"
                )?;
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

/// Replays what `selection` selects, with the admin API's own code
/// ([`event_replay::replay_selected`]); on a terminal a progress bar over
/// the count a dry run found first. The replayed ids, and how many matched.
async fn replay_selection(
    store: &dyn Store,
    reads: &dyn StoreReads,
    routing: &ReplayRouting<'_>,
    selection: &EventSelection,
    dry_run: bool,
) -> anyhow::Result<(Vec<String>, u64)> {
    let filter = selection.filter()?;
    let progress = Progress::on_stderr();
    let now = clock::unix_millis();
    // A bar needs the total: a dry run over the same selection counts it.
    let total = if dry_run {
        None
    } else {
        progress.update(format_args!("counting the events to replay"));
        let counted =
            event_replay::replay_selected(store, reads, routing, &filter, true, now, |count, _| {
                progress.update(format_args!("{} found", count.matched));
            })
            .await
            .context("replay")?;
        Some(counted.matched)
    };
    let mut replayed = Vec::new();
    let count = event_replay::replay_selected(
        store,
        reads,
        routing,
        &filter,
        dry_run,
        now,
        |count, ids| {
            replayed.extend_from_slice(ids);
            match total {
                Some(total) => progress.counts(
                    count.matched,
                    total,
                    format_args!("{} replayed", count.replayed),
                ),
                None => progress.update(format_args!("{} matched", count.matched)),
            }
        },
    )
    .await
    .context("replay")?;
    progress.finish(format_args!(
        "{} {} of {} matching event(s)",
        if dry_run {
            "would replay at most"
        } else {
            "replayed"
        },
        if dry_run {
            count.matched
        } else {
            count.replayed
        },
        count.matched
    ));
    Ok((replayed, count.matched))
}
