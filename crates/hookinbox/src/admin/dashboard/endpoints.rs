//! `/ui/endpoints` and `/ui/endpoints/{id}`: each configured endpoint with
//! its secret versions (their windows, and the requests each verified in
//! the last 24 hours in this process), its targets' states (closed, open,
//! half_open, paused: with a button to pause or resume each) and backlog,
//! and its latest events.

use axum::extract::State;
use axum::response::Html;
use axum::Extension;
use hookinbox_store::EventFilter;
use maud::html;
use serde::Deserialize;

use super::event_table::event_table;
use super::layout::{self, ago, count, status, utc, Section};
use super::{render, Dashboard, PageError, Visitor};
use crate::admin::api::{configured_targets, overview_of, ApiPath, ApiQuery};
use crate::clock;
use crate::delivery::target_states::TargetStates;
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

/// What the page was sent back with after a pause or a resume.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Done {
    /// The target just paused.
    paused: Option<String>,
    /// The target just resumed.
    resumed: Option<String>,
}

/// `GET /ui/endpoints/{id}`
pub async fn page(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(done): ApiQuery<Done>,
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
    let backlog = |name: &str| {
        overview
            .targets
            .iter()
            .find(|t| t.endpoint_id == id && t.target == name)
    };
    let mine: Vec<(String, String)> = configured_targets(&dashboard.operator)
        .into_iter()
        .filter(|(endpoint, _)| *endpoint == id)
        .collect();
    let states = TargetStates::read_for(&mine, dashboard.operator.reads.as_ref())
        .await?
        .rows;
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
        @if let Some(target) = &done.paused {
            p.notice role="status" { "Paused " (target) ": its deliveries wait, without attempts, until it is resumed." }
        }
        @if let Some(target) = &done.resumed {
            p.notice role="status" { "Resumed " (target) ": its waiting deliveries go, in order." }
        }
        @if states.is_empty() {
            p { "No targets: events are marked processed as they arrive." }
        } @else {
            table {
                caption { "State and backlog now, failures over 24 hours" }
                thead { tr {
                    th scope="col" { "Target" } th scope="col" { "State" }
                    th.num scope="col" { "Pending" } th.num scope="col" { "In flight" }
                    th scope="col" { "Oldest due" } th.num scope="col" { "Failed (24 h)" }
                    th scope="col" { "Action" }
                } }
                tbody {
                    @for state in &states {
                        @let numbers = backlog(&state.target);
                        @let paused = state.paused_at_ms.is_some();
                        tr {
                            td { (state.target) }
                            td {
                                (status(state.state))
                                @if paused && state.circuit != "closed" { " (circuit " (state.circuit) ")" }
                                @if let Some(at) = state.paused_at_ms { " since " (utc(at)) }
                            }
                            @match numbers {
                                Some(target) => {
                                    td.num { (count(target.pending)) }
                                    td.num { (count(target.leased)) }
                                    td { @match target.oldest_due_at_ms { Some(at) => { (ago(at, now)) } None => { "—" } } }
                                    td.num { (count(target.failed_24h)) }
                                }
                                None => { td.num { "—" } td.num { "—" } td { "—" } td.num { "—" } }
                            }
                            td {
                                form.inline method="post" action={ "/ui/targets/" (if paused { "resume" } else { "pause" }) } {
                                    @if let Some(session) = visitor.session() {
                                        input type="hidden" name="csrf" value=(session.csrf);
                                    }
                                    input type="hidden" name="endpoint" value=(id);
                                    input type="hidden" name="target" value=(state.target);
                                    @if paused {
                                        button.primary type="submit" { "Resume" }
                                    } @else {
                                        button.danger type="submit" { "Pause" }
                                    }
                                }
                            }
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
