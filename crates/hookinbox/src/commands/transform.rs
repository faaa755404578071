//! `hookinbox transform test`: what a target would be sent for one stored
//! event (`--event`) or a body from a file (`--body-file`), through the
//! target's `transform` and `body` settings, without sending anything.
//! A script error is printed with the exception's own message here (it
//! is the operator's event on the operator's terminal), unlike the
//! delivery's stored error.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use bytes::Bytes;
use hookinbox_store::{StoredEvent, UnsignedMetadata};

use super::output::note;
use crate::config;
use crate::delivery::reshape::{Reshape, Reshaped};
use crate::delivery::target::Target;
use crate::endpoint;
use crate::storage;

/// Where the event comes from.
pub enum EventSource<'a> {
    /// A stored event, by inbox id.
    Stored(&'a str),
    /// A body from a file, with its `Content-Type` and event type.
    File {
        path: &'a Path,
        content_type: &'a str,
        event_type: Option<&'a str>,
    },
}

/// Prints the request `target` (`ENDPOINT/TARGET`) would be sent; `false`
/// when the transform failed (the reason on stderr).
pub async fn test(
    config_path: &Path,
    target: &str,
    source: EventSource<'_>,
    out: &mut impl Write,
) -> anyhow::Result<bool> {
    let settings = config::load(config_path)?;
    let (endpoint_id, target_name) = target
        .split_once('/')
        .context("--target must be ENDPOINT/TARGET")?;
    let (index, endpoint_settings) = settings
        .endpoint(endpoint_id)
        .with_context(|| format!("no endpoint `{endpoint_id}` in {}", config_path.display()))?;
    let endpoint = endpoint::Endpoint::build(endpoint_settings, index, settings.delivery.lease)?;
    let target = endpoint
        .targets
        .iter()
        .find(|target| target.name == target_name)
        .with_context(|| format!("endpoint `{endpoint_id}` has no target `{target_name}`"))?;
    let event = match source {
        EventSource::Stored(id) => {
            let reader = storage::open_reader(&settings.storage, &settings.encryption).await?;
            let Some((detail, raw)) = reader.show_event(id, true).await? else {
                note!("no event {id}");
                return Ok(false);
            };
            StoredEvent {
                id: detail.summary.id,
                endpoint_id: detail.summary.endpoint_id,
                provider: detail.summary.provider,
                provider_event_id: detail.summary.provider_event_id,
                event_type: detail.summary.event_type,
                object_id: detail.object_id,
                object_version: detail.object_version,
                received_at_ms: detail.summary.received_at_ms,
                content_type: detail.content_type,
                payload: Some(raw.context("the event's payload was purged by retention")?),
                unsigned_metadata: UnsignedMetadata::default(),
                trace_parent: None,
            }
        }
        EventSource::File {
            path,
            content_type,
            event_type,
        } => {
            let body =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            StoredEvent {
                id: "transform-test".into(),
                endpoint_id: endpoint_id.to_owned(),
                provider: endpoint_settings.provider.to_owned(),
                provider_event_id: "transform-test".into(),
                event_type: event_type.map(str::to_owned),
                object_id: None,
                object_version: None,
                received_at_ms: crate::clock::unix_millis(),
                content_type: Some(content_type.to_owned()),
                payload: Some(Bytes::from(body)),
                unsigned_metadata: UnsignedMetadata::default(),
                trace_parent: None,
            }
        }
    };
    match reshape(target, event).await {
        Ok(Reshaped::Send { event, overrides }) => {
            let url = overrides
                .url
                .clone()
                .unwrap_or_else(|| target.reshape.url.clone());
            writeln!(out, "{} {}", overrides.method, url)?;
            if let Some(content_type) = &event.content_type {
                writeln!(out, "content-type: {content_type}")?;
            }
            writeln!(out, "idempotency-key: {}", event.id)?;
            for (name, value) in &overrides.headers {
                writeln!(out, "{name}: {}", String::from_utf8_lossy(value.as_bytes()))?;
            }
            writeln!(out)?;
            out.write_all(event.payload.as_deref().unwrap_or_default())?;
            writeln!(out)?;
            Ok(true)
        }
        Ok(Reshaped::Cancel) => {
            writeln!(
                out,
                "cancelled: the transform answered `cancel: true`; nothing would be sent"
            )?;
            Ok(true)
        }
        Ok(Reshaped::Failed(error)) | Err(error) => {
            note!("transform failed: {error}");
            Ok(false)
        }
    }
}

/// As a worker would reshape it, but on this thread and with the
/// exception's message in the error.
async fn reshape(target: &Target, event: StoredEvent) -> Result<Reshaped, String> {
    let reshape: &Reshape = &target.reshape;
    let Some(script) = &reshape.transform else {
        return Ok(Reshaped::Send {
            event: Box::new(reshape.body_as_configured(event)),
            overrides: Default::default(),
        });
    };
    let input = reshape.webhook_input(&event);
    let outcome = script
        .sandbox(&script.text())
        .and_then(|sandbox| sandbox.run(&input))
        .map_err(|error| error.detail())?;
    Ok(Reshape::reshaped(event, outcome))
}
