//! `GET /ui`: does anything arrive, what waits, what failed in the last
//! 24 hours — by endpoint and by target — and the latest failures, each a
//! link to its event.

use axum::extract::State;
use axum::response::Html;
use axum::Extension;
use hookinbox_store::{EventFilter, InboxStatus};
use maud::html;

use super::event_table::event_table;
use super::layout::{self, ago, count, utc, Section};
use super::{render, Dashboard, PageError, Visitor};
use crate::admin::api::overview_of;
use crate::event_selection::EventSelection;

/// Failed events listed on the overview.
const RECENT_FAILURES: usize = 10;

/// The list of an endpoint's failed events.
fn failed_on(endpoint: &str) -> String {
    EventSelection {
        status: Some("failed".into()),
        endpoint: Some(endpoint.into()),
        ..EventSelection::default()
    }
    .query_string()
}

pub async fn page(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
) -> Result<Html<String>, PageError> {
    let operator = &dashboard.operator;
    let answer = overview_of(operator).await?;
    let overview = &answer.store;
    let failures = operator
        .reads
        .list_events(&EventFilter {
            status: Some(InboxStatus::Failed),
            limit: RECENT_FAILURES,
            ..EventFilter::default()
        })
        .await?
        .events;
    let now = overview.now_ms;
    let per_second = overview.received_last_minute.count as f64 / 60.0;
    let backlog: u64 = overview
        .targets
        .iter()
        .map(|t| t.pending.count + t.leased.count)
        .sum();
    let failed: u64 = overview.endpoints.iter().map(|e| e.failed_24h.count).sum();
    let ack = match answer.ack_p99 {
        None => "none yet".to_owned(),
        Some(p99) => match p99.upper_bound_seconds {
            Some(seconds) if seconds < 1.0 => format!("≤ {} ms", seconds * 1000.0),
            Some(seconds) => format!("≤ {seconds} s"),
            None => "> 10 s".to_owned(),
        },
    };
    let body = html! {
        p.muted { "As of " (utc(now)) ". Counts stop at 100,000 (shown as 100000+)." }
        dl.cards {
            div { dt { "Accepted per second (last minute)" } dd { (format!("{per_second:.1}")) } }
            div { dt { "Ack p99 (this process, since start)" } dd { (ack) } }
            div { dt { "Backlog (deliveries waiting)" } dd { (backlog) } }
            div { dt { "Failed events (24 h)" } dd { (failed) } }
        }
        h2 { "Latest failed events" }
        @if failures.is_empty() {
            p { "No failed events." }
        } @else {
            (event_table(&format!("The {RECENT_FAILURES} newest events whose delivery failed"), &failures, true))
            p { a href="/ui/events?status=failed" { "All failed events" } }
        }
        h2 { "Endpoints, last 24 hours" }
        table {
            caption { "Events received and failed per endpoint" }
            thead { tr {
                th scope="col" { "Endpoint" } th.num scope="col" { "Received" }
                th.num scope="col" { "Failed" } th scope="col" { "Last event" }
            } }
            tbody {
                @for endpoint in &overview.endpoints {
                    tr {
                        td { a href={ "/ui/endpoints/" (endpoint.endpoint_id) } { (endpoint.endpoint_id) } }
                        td.num { (count(endpoint.received_24h)) }
                        td.num {
                            a href={ "/ui/events?" (failed_on(&endpoint.endpoint_id)) } {
                                (count(endpoint.failed_24h))
                            }
                        }
                        td {
                            @match endpoint.last_received_at_ms {
                                Some(at) => { (ago(at, now)) }
                                None => { "never" }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Targets" }
        @if overview.targets.is_empty() {
            p { "No endpoint has a target." }
        } @else {
            table {
                caption { "Deliveries waiting now, and events failed in the last 24 hours, per target" }
                thead { tr {
                    th scope="col" { "Endpoint" } th scope="col" { "Target" }
                    th.num scope="col" { "Pending" } th.num scope="col" { "In flight" }
                    th scope="col" { "Oldest due" } th.num scope="col" { "Failed (24 h)" }
                } }
                tbody {
                    @for target in &overview.targets {
                        tr {
                            td { (target.endpoint_id) }
                            td { (target.target) }
                            td.num { (count(target.pending)) }
                            td.num { (count(target.leased)) }
                            td {
                                @match target.oldest_due_at_ms {
                                    Some(at) => { (ago(at, now)) }
                                    None => { "—" }
                                }
                            }
                            td.num { (count(target.failed_24h)) }
                        }
                    }
                }
            }
        }
    };
    Ok(render(layout::page(
        "Overview",
        Section::Overview,
        visitor.session(),
        body,
    )))
}
