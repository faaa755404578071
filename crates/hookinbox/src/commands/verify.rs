//! `hookinbox verify`: check one captured request offline with the same
//! pipeline `serve` uses. Stdout carries one JSON verdict; stderr explains it
//! for a human (secret versions tried, timestamp skew) without secrets.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use hookinbox_verify::{Diagnosis, Headers, Outcome, Request};
use serde_json::json;

use super::output::note;
use crate::config;
use crate::{clock, endpoint};

/// Prints the verdict to `out` and returns it: `true` when the request
/// would be accepted.
pub fn run(
    config_path: &Path,
    endpoint_id: &str,
    now: Option<i64>,
    header_lines: &[String],
    body_file: &Path,
    query: Option<&str>,
    out: &mut impl Write,
) -> anyhow::Result<bool> {
    let settings = config::load(config_path)?;
    let (index, endpoint_settings) = settings
        .endpoint(endpoint_id)
        .with_context(|| format!("no endpoint `{endpoint_id}` in {}", config_path.display()))?;
    let endpoint = endpoint::Endpoint::build(endpoint_settings, index, settings.delivery.lease)?;
    let mut headers = Headers::new();
    for line in header_lines {
        let (name, value) = line
            .split_once(':')
            .with_context(|| format!("--header `{line}` is not `Name: value`"))?;
        headers.append(name.trim(), value.trim());
    }
    let body =
        std::fs::read(body_file).with_context(|| format!("cannot read {}", body_file.display()))?;
    let now = now.unwrap_or_else(clock::unix_seconds);
    // The receipt of an offline check is its `now` (Dropbox's ids are receipts).
    let request = Request::new(&headers, &body)
        .with_query(query)
        .with_received_at_ms(now.checked_mul(1000));

    note!(
        "endpoint `{}` (provider {}), verifying at {now}",
        endpoint.id,
        endpoint.provider
    );
    match endpoint.verify(&request, now) {
        Ok(verified) => {
            explain(verified.diagnosis());
            note!(
                "matched secret version `{}`",
                verified.matched_secret_version()
            );
            let unsigned = verified.unsigned_metadata();
            if !unsigned.is_empty() {
                note!(
                    "not covered by the signature:{}{}",
                    if unsigned.event_id { " event id" } else { "" },
                    if unsigned.event_type {
                        " event type"
                    } else {
                        ""
                    }
                );
            }
            let verdict = match verified.outcome() {
                Outcome::Event(event) => {
                    note!("accepted: event `{}`", event.event_id);
                    json!({"accepted": true, "event_id": event.event_id, "matched_secret_version": verified.matched_secret_version()})
                }
                Outcome::Ignored(event) => {
                    note!(
                        "verified, but the endpoint ignores type `{}`",
                        event.event_type.as_deref().unwrap_or("")
                    );
                    json!({"accepted": true, "ignored": true, "event_id": event.event_id, "matched_secret_version": verified.matched_secret_version()})
                }
                Outcome::Handshake(reply) => {
                    note!(
                        "verified handshake: answered with status {}, not stored",
                        reply.status
                    );
                    json!({"accepted": true, "handshake": true, "matched_secret_version": verified.matched_secret_version()})
                }
            };
            writeln!(out, "{verdict}")?;
            out.flush()?;
            Ok(true)
        }
        Err(failure) => {
            explain(&failure.diagnosis);
            note!("refused: {}", failure.refusal);
            writeln!(
                out,
                "{}",
                json!({"accepted": false, "reason": failure.refusal.reason.as_str()})
            )?;
            out.flush()?;
            Ok(false)
        }
    }
}

fn explain(diagnosis: &Diagnosis) {
    if diagnosis.presented_signatures > 0 {
        note!("signatures presented: {}", diagnosis.presented_signatures);
    }
    if !diagnosis.tried_versions.is_empty() {
        note!(
            "secret versions tried: {}",
            diagnosis.tried_versions.join(", ")
        );
    }
    if !diagnosis.inactive_versions.is_empty() {
        note!(
            "secret versions not tried (outside not_before/not_after): {}",
            diagnosis.inactive_versions.join(", ")
        );
    }
    if let (Some(signed_at), Some(skew)) = (diagnosis.signed_at, diagnosis.skew_seconds) {
        let tolerance = diagnosis
            .tolerance_seconds
            .map(|t| format!("tolerance {t}s"))
            .unwrap_or_else(|| "no tolerance".into());
        let direction = if skew >= 0 { "old" } else { "in the future" };
        note!(
            "signed timestamp {signed_at}: {}s {direction} ({tolerance})",
            skew.unsigned_abs()
        );
    }
}
