//! `/ui/endpoints` and `/ui/endpoints/{id}`: each configured endpoint with
//! its secret versions (their windows, and the requests each verified in
//! the last 24 hours in this process), its targets' backlog, and its
//! latest events.

use axum::extract::State;
use axum::response::Html;
use axum::Extension;
use hookinbox_store::EventFilter;
use maud::html;

use super::event_table::event_table;
use super::layout::{self, ago, count, utc, Section};
use super::{render, Dashboard, PageError, Visitor};
use crate::admin::api::{overview_of, ApiPath};
use crate::clock;
use crate::event_selection::EventSelection;
use crate::secrets::key_status::KeysStatus;

/// Events listed on an endpoint's page.
const RECENT: usize = 20;

/// The configured endpoint ids, sorted.
pub fn configured(dashboard: &Dashboard) -> Vec<String> {
    let mut ids: Vec<String> = dashboard
        .operator
        .keys
        .as_ref()
        .map(|keys| keys.endpoints().keys().cloned().collect())
        .unwrap_or_default();
    ids.sort();
    ids
}

fn keys_status(dashboard: &Dashboard) -> Option<KeysStatus> {
    let keys = dashboard.operator.keys.as_ref()?;
    Some(KeysStatus::of(keys.endpoints(), clock::unix_seconds()))
}

/// `GET /ui/endpoints`
pub async fn index(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
) -> Result<Html<String>, PageError> {
    let status = keys_status(&dashboard);
    let endpoints = status
        .as_ref()
        .map(|s| s.endpoints.as_slice())
        .unwrap_or_default();
    let body = html! {
        table {
            caption { "Configured endpoints" }
            thead { tr {
                th scope="col" { "Endpoint" } th scope="col" { "Provider" }
                th.num scope="col" { "Secret versions" } th.num scope="col" { "Active now" }
            } }
            tbody {
                @for endpoint in endpoints {
                    tr {
                        td { a href={ "/ui/endpoints/" (endpoint.id) } { (endpoint.id) } }
                        td { (endpoint.provider) }
                        td.num { (endpoint.versions.len()) }
                        td.num { (endpoint.versions.iter().filter(|v| v.active).count()) }
                    }
                }
            }
        }
    };
    Ok(render(layout::page(
        "Endpoints",
        Section::Endpoints,
        visitor.session(),
        body,
    )))
}

/// `GET /ui/endpoints/{id}`
pub async fn page(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
    ApiPath(id): ApiPath<String>,
) -> Result<Html<String>, PageError> {
    let status_now = keys_status(&dashboard);
    let Some(keys) = status_now
        .as_ref()
        .and_then(|s| s.endpoints.iter().find(|e| e.id == id))
    else {
        return Err(PageError::NoSuchEndpoint(id));
    };
    let overview = overview_of(&dashboard.operator).await?.store;
    let now = overview.now_ms;
    let numbers = overview.endpoints.iter().find(|e| e.endpoint_id == id);
    let targets: Vec<_> = overview
        .targets
        .iter()
        .filter(|t| t.endpoint_id == id)
        .collect();
    let recent = dashboard
        .operator
        .reads
        .list_events(&EventFilter {
            endpoint_id: Some(id.clone()),
            limit: RECENT,
            ..EventFilter::default()
        })
        .await?
        .events;
    let window =
        |at: Option<i64>| at.map_or_else(|| "—".to_owned(), |s| utc(s.saturating_mul(1000)));
    let all_events = EventSelection {
        endpoint: Some(id.clone()),
        ..EventSelection::default()
    }
    .query_string();
    let body = html! {
        dl.fields {
            dt { "Provider" } dd { (keys.provider) }
            @if let Some(numbers) = numbers {
                dt { "Received (24 h)" } dd { (count(numbers.received_24h)) }
                dt { "Failed (24 h)" } dd { (count(numbers.failed_24h)) }
                dt { "Last event" } dd {
                    @match numbers.last_received_at_ms { Some(at) => { (ago(at, now)) } None => { "never" } }
                }
            }
        }
        h2 { "Secret versions" }
        table {
            caption { "The key ring in use, in order of preference; matches are this process's, over 24 hours" }
            thead { tr {
                th scope="col" { "Version" } th scope="col" { "Not before" } th scope="col" { "Not after" }
                th scope="col" { "Active now" } th.num scope="col" { "Matches (24 h)" }
            } }
            tbody {
                @for version in &keys.versions {
                    tr {
                        td.mono { (version.version) }
                        td { (window(version.not_before)) }
                        td { (window(version.not_after)) }
                        td { @if version.active { "yes" } @else { "no" } }
                        td.num { (version.matches_24h) }
                    }
                }
            }
        }
        h2 { "Targets" }
        @if targets.is_empty() {
            p { "No targets: events are marked processed as they arrive." }
        } @else {
            table {
                caption { "Backlog now and failures over 24 hours" }
                thead { tr {
                    th scope="col" { "Target" } th.num scope="col" { "Pending" } th.num scope="col" { "In flight" }
                    th scope="col" { "Oldest due" } th.num scope="col" { "Failed (24 h)" }
                } }
                tbody {
                    @for target in &targets {
                        tr {
                            td { (target.target) }
                            td.num { (count(target.pending)) }
                            td.num { (count(target.leased)) }
                            td { @match target.oldest_due_at_ms { Some(at) => { (ago(at, now)) } None => { "—" } } }
                            td.num { (count(target.failed_24h)) }
                        }
                    }
                }
            }
        }
        h2 { "Latest events" }
        @if recent.is_empty() {
            p { "No events yet." }
        } @else {
            (event_table(&format!("The {RECENT} newest events of this endpoint"), &recent, false))
            p { a href={ "/ui/events?" (all_events) } { "All events of this endpoint" } }
        }
    };
    Ok(render(layout::page(
        &format!("Endpoint {id}"),
        Section::Endpoints,
        visitor.session(),
        body,
    )))
}
