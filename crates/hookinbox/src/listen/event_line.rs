//! What `listen` prints for each attempt: one line a person reads (type,
//! event id, the local app's status, latency), or with `--json` one JSON
//! object per line for scripts.

use std::io::Write;
use std::time::Duration;

use serde::Serialize;

use super::forwarder::Answer;
use crate::admin::api::StreamedWebhook;

/// One attempt at one event, as printed.
#[derive(Debug, Serialize)]
pub struct EventLine<'a> {
    pub inbox_id: &'a str,
    pub provider_event_id: &'a str,
    pub event_type: Option<&'a str>,
    /// `acknowledged`, `refused`, `unsendable` or `retrying`.
    pub outcome: &'static str,
    /// The local app's status; absent when it did not answer.
    pub status: Option<u16>,
    pub error: Option<&'a str>,
    pub latency_ms: u64,
    /// 1 for the first attempt at this event.
    pub attempt: u32,
    /// With `retrying`: how long until the next attempt.
    pub retry_in_ms: Option<u64>,
}

impl<'a> EventLine<'a> {
    pub fn new(
        webhook: &'a StreamedWebhook,
        answer: &'a Answer,
        latency: Duration,
        attempt: u32,
        retry_in: Option<Duration>,
    ) -> EventLine<'a> {
        let (outcome, status, error) = match answer {
            Answer::Acknowledged(status) => ("acknowledged", Some(*status), None),
            Answer::Refused(status) => ("refused", Some(*status), None),
            Answer::Unsendable(error) => ("unsendable", None, Some(error.as_str())),
            Answer::Failed { status, error } => ("retrying", *status, Some(error.as_str())),
        };
        EventLine {
            inbox_id: &webhook.inbox_id,
            provider_event_id: &webhook.provider_event_id,
            event_type: webhook.event_type.as_deref(),
            outcome,
            status,
            error,
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            attempt,
            retry_in_ms: retry_in.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    pub fn write(&self, json: bool, out: &mut impl Write) -> std::io::Result<()> {
        if json {
            serde_json::to_writer(&mut *out, self)?;
            writeln!(out)?;
        } else {
            let status = match (self.status, self.error) {
                (Some(status), _) => status.to_string(),
                (None, Some(error)) => error.to_owned(),
                (None, None) => "-".to_owned(),
            };
            write!(
                out,
                "{}  {}  {}  -> {status}  {} ms",
                self.event_type.unwrap_or("-"),
                self.provider_event_id,
                self.inbox_id,
                self.latency_ms
            )?;
            if let Some(retry_in) = self.retry_in_ms {
                write!(out, "  (attempt {}, again in {retry_in} ms)", self.attempt)?;
            }
            writeln!(out)?;
        }
        out.flush()
    }
}
