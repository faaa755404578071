//! `events show` for a person: what the event is, then each delivery with
//! its status, attempts and last error, then the attempts one per line —
//! the questions an operator asks ("did it reach the ledger? why not?").
//! `--json` carries the same fields, and the raw timestamps, for scripts.

use std::io::{self, Write};
use std::time::{Duration, UNIX_EPOCH};

use hookinbox_store::{AttemptView, DeliveryView, EventDetail};

/// Writes the summary of `event`.
pub fn write_event(out: &mut impl Write, event: &EventDetail) -> io::Result<()> {
    let summary = &event.summary;
    writeln!(out, "event      {}", summary.id)?;
    writeln!(
        out,
        "endpoint   {} ({})",
        summary.endpoint_id, summary.provider
    )?;
    writeln!(out, "event id   {}", summary.provider_event_id)?;
    if let Some(event_type) = &summary.event_type {
        writeln!(out, "type       {event_type}")?;
    }
    writeln!(out, "status     {}", summary.status)?;
    writeln!(out, "received   {}", date_ms(summary.received_at_ms))?;
    if let Some(fetched) = event.fetched_at_ms {
        writeln!(
            out,
            "fetched    {} (by reconciliation, from the provider's API: its webhook never arrived)",
            date_ms(fetched)
        )?;
    }
    // Said only when routing left a target out: otherwise the deliveries
    // below name every target.
    if !event.not_routed.is_empty() {
        let routed = event.routed_to.as_deref().unwrap_or_default();
        if routed.is_empty() {
            writeln!(out, "routed to  no target matched")?;
        } else {
            writeln!(out, "routed to  {}", routed.join(", "))?;
        }
        writeln!(out, "not routed {}", event.not_routed.join(", "))?;
    }
    if let Some(trace_id) = &event.trace_id {
        writeln!(out, "trace      {trace_id}")?;
    }
    if let Some(created) = event.provider_created_at {
        writeln!(
            out,
            "created    {} (by the provider)",
            date_ms(created.saturating_mul(1000))
        )?;
    }
    if let Some(object_id) = &event.object_id {
        match event.object_version {
            Some(version) => writeln!(out, "object     {object_id}, version {version}")?,
            None => writeln!(out, "object     {object_id}")?,
        }
    }
    let size = match event.payload_bytes {
        Some(bytes) => format!("{bytes} bytes"),
        None => "purged by retention".to_owned(),
    };
    let content_type = event.content_type.as_deref().unwrap_or("no content type");
    writeln!(out, "payload    {size}, {content_type}")?;
    writeln!(out, "sha256     {}", event.payload_sha256)?;
    writeln!(out, "secret     version {}", event.matched_secret_version)?;
    match event.deliveries.len() {
        0 if !event.not_routed.is_empty() => writeln!(
            out,
            "\nno deliveries (no target matched: their event_types or filter did not take it)"
        )?,
        0 => writeln!(
            out,
            "\nno deliveries (the endpoint had no targets when it arrived)"
        )?,
        count => writeln!(out, "\ndeliveries {count}")?,
    }
    for delivery in &event.deliveries {
        write_delivery(out, delivery)?;
    }
    Ok(())
}

fn write_delivery(out: &mut impl Write, delivery: &DeliveryView) -> io::Result<()> {
    let attempts = match delivery.attempts {
        1 => "1 attempt".to_owned(),
        n => format!("{n} attempts"),
    };
    writeln!(
        out,
        "  {}  {}  {attempts}  (delivery {}, generation {})",
        delivery.target, delivery.status, delivery.id, delivery.generation
    )?;
    if let Some(at) = delivery.delivered_at_ms {
        writeln!(out, "    delivered   {}", date_ms(at))?;
    } else if matches!(delivery.status.as_str(), "PENDING" | "LEASED") {
        writeln!(
            out,
            "    next try    {}",
            date_ms(delivery.next_attempt_at_ms)
        )?;
    }
    if let Some(error) = &delivery.last_error {
        writeln!(out, "    last error  {error}")?;
    }
    for attempt in &delivery.attempt_log {
        write_attempt(out, attempt)?;
    }
    Ok(())
}

fn write_attempt(out: &mut impl Write, attempt: &AttemptView) -> io::Result<()> {
    write!(
        out,
        "    attempt {}   {}  {}",
        attempt.attempt,
        date_ms(attempt.finished_at_ms),
        attempt.outcome
    )?;
    match &attempt.error {
        Some(error) => writeln!(out, "  {error}"),
        None => writeln!(out),
    }
}

/// A unix-milliseconds time as an HTTP date (UTC, whole seconds); the raw
/// number when it is before 1970.
pub(crate) fn date_ms(unix_ms: i64) -> String {
    match u64::try_from(unix_ms) {
        Ok(ms) => httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_millis(ms)),
        Err(_) => unix_ms.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookinbox_store::EventSummary;

    const RECEIVED_MS: i64 = 1_764_559_329_123; // Mon, 01 Dec 2025 03:22:09 GMT

    fn event(deliveries: Vec<DeliveryView>) -> EventDetail {
        EventDetail {
            summary: EventSummary {
                id: "0193f1c2-7a4e-7000-8000-000000000001".into(),
                endpoint_id: "stripe".into(),
                provider: "stripe".into(),
                provider_event_id: "evt_1".into(),
                event_type: Some("invoice.paid".into()),
                status: "FAILED".into(),
                received_at_ms: RECEIVED_MS,
            },
            object_id: Some("in_1".into()),
            object_version: Some(7),
            provider_created_at: Some(RECEIVED_MS / 1000 - 2),
            content_type: Some("application/json".into()),
            matched_secret_version: "2026-05".into(),
            payload_sha256: "9f86d081".into(),
            payload_bytes: Some(1234),
            fetched_at_ms: None,
            routed_to: Some(vec!["sink".into()]),
            not_routed: Vec::new(),
            trace_id: None,
            deliveries,
        }
    }

    fn text(event: &EventDetail) -> String {
        let mut out = Vec::new();
        write_event(&mut out, event).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn dates_are_http_dates_in_utc() {
        assert_eq!(date_ms(RECEIVED_MS), "Mon, 01 Dec 2025 03:22:09 GMT");
        assert_eq!(date_ms(-5), "-5");
    }

    #[test]
    fn shows_metadata_deliveries_attempts_and_last_errors() {
        let dead = DeliveryView {
            id: 12,
            target: "ledger".into(),
            generation: 1,
            status: "DEAD".into(),
            attempts: 2,
            next_attempt_at_ms: RECEIVED_MS + 1_000,
            last_error: Some("http 500 (gave up after 2 attempts)".into()),
            delivered_at_ms: None,
            attempt_log: vec![
                AttemptView {
                    attempt: 1,
                    finished_at_ms: RECEIVED_MS + 1_000,
                    outcome: "RETRY".into(),
                    error: Some("http 500".into()),
                },
                AttemptView {
                    attempt: 2,
                    finished_at_ms: RECEIVED_MS + 3_000,
                    outcome: "DEAD".into(),
                    error: Some("http 500 (gave up after 2 attempts)".into()),
                },
            ],
        };
        let delivered = DeliveryView {
            id: 13,
            target: "audit".into(),
            generation: 1,
            status: "DELIVERED".into(),
            attempts: 1,
            next_attempt_at_ms: RECEIVED_MS,
            last_error: None,
            delivered_at_ms: Some(RECEIVED_MS + 500),
            attempt_log: vec![AttemptView {
                attempt: 1,
                finished_at_ms: RECEIVED_MS + 500,
                outcome: "DELIVERED".into(),
                error: None,
            }],
        };
        assert_eq!(
            text(&event(vec![dead, delivered])),
            "\
event      0193f1c2-7a4e-7000-8000-000000000001
endpoint   stripe (stripe)
event id   evt_1
type       invoice.paid
status     FAILED
received   Mon, 01 Dec 2025 03:22:09 GMT
created    Mon, 01 Dec 2025 03:22:07 GMT (by the provider)
object     in_1, version 7
payload    1234 bytes, application/json
sha256     9f86d081
secret     version 2026-05

deliveries 2
  ledger  DEAD  2 attempts  (delivery 12, generation 1)
    last error  http 500 (gave up after 2 attempts)
    attempt 1   Mon, 01 Dec 2025 03:22:10 GMT  RETRY  http 500
    attempt 2   Mon, 01 Dec 2025 03:22:12 GMT  DEAD  http 500 (gave up after 2 attempts)
  audit  DELIVERED  1 attempt  (delivery 13, generation 1)
    delivered   Mon, 01 Dec 2025 03:22:09 GMT
    attempt 1   Mon, 01 Dec 2025 03:22:09 GMT  DELIVERED
"
        );
    }

    #[test]
    fn an_event_in_a_trace_names_its_trace_id() {
        let mut event = event(Vec::new());
        event.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
        assert!(text(&event).contains("\ntrace      4bf92f3577b34da6a3ce929d0e0e4736\n"));
    }

    #[test]
    fn a_pending_delivery_shows_its_next_try_and_a_purged_payload_says_so() {
        let mut event = event(vec![DeliveryView {
            id: 14,
            target: "ledger".into(),
            generation: 2,
            status: "PENDING".into(),
            attempts: 0,
            next_attempt_at_ms: RECEIVED_MS,
            last_error: None,
            delivered_at_ms: None,
            attempt_log: Vec::new(),
        }]);
        event.payload_bytes = None;
        let text = text(&event);
        assert!(
            text.contains("payload    purged by retention, application/json\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "  ledger  PENDING  0 attempts  (delivery 14, generation 2)\n    next try    Mon, 01 Dec 2025 03:22:09 GMT\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn an_event_without_targets_says_it_has_no_deliveries() {
        let text = text(&event(Vec::new()));
        assert!(
            text.ends_with("\nno deliveries (the endpoint had no targets when it arrived)\n"),
            "{text}"
        );
    }

    #[test]
    fn an_event_routing_left_out_names_the_targets_it_went_to_and_not() {
        let mut event = event(Vec::new());
        event.routed_to = Some(vec!["billing".into()]);
        event.not_routed = vec!["fraud".into(), "ci".into()];
        let shown = text(&event);
        assert!(
            shown.contains("\nrouted to  billing\nnot routed fraud, ci\n"),
            "{shown}"
        );
        event.routed_to = Some(Vec::new());
        event.not_routed = vec!["billing".into(), "fraud".into()];
        let shown = text(&event);
        assert!(
            shown.contains("\nrouted to  no target matched\nnot routed billing, fraud\n"),
            "{shown}"
        );
        assert!(
            shown.ends_with("\nno deliveries (no target matched: their event_types or filter did not take it)\n"),
            "{shown}"
        );
    }
}
