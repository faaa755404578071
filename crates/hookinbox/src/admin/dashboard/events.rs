//! `GET /ui/events`: the event list, with the admin API's filters and its
//! cursor paging (server-side: one page read, never a count of them all).

use axum::extract::State;
use axum::response::Html;
use axum::Extension;
use maud::{html, Markup};

use super::event_table::event_table;
use super::layout::{self, Section};
use super::{render, Dashboard, PageError, Visitor};
use crate::admin::api::{ApiQuery, PageParams};
use crate::event_selection::EventSelection;

/// Events on one page.
const PAGE: u32 = 50;

pub async fn page(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
    ApiQuery(selection): ApiQuery<EventSelection>,
    ApiQuery(mut paging): ApiQuery<PageParams>,
) -> Result<Html<String>, PageError> {
    let mut filter = selection.filter()?;
    paging.limit = Some(paging.limit.unwrap_or(PAGE));
    paging.apply(&mut filter)?;
    let page = dashboard.operator.reads.list_events(&filter).await?;
    let query = selection.query_string();
    let endpoints = super::endpoints::configured(&dashboard);
    let body = html! {
        (filter_form(&selection, &endpoints))
        @if !selection.is_empty() {
            p { a href={ "/ui/replay?" (query) } { "Replay the events this filter selects…" } }
        }
        @if page.events.is_empty() {
            p { "No events." }
        } @else {
            (event_table("Events, newest first", &page.events, true))
        }
        nav.pager aria-label="Pages" {
            @if paging.cursor.is_some() {
                a href={ "/ui/events?" (query) } { "First page" }
            }
            @if let Some(next) = &page.next_cursor {
                a href={ "/ui/events?" (next_page(&query, next, paging.limit)) } { "Next page" }
            }
        }
    };
    Ok(render(layout::page(
        "Events",
        Section::Events,
        visitor.session(),
        body,
    )))
}

/// The next page's query: the same filters and size, from `cursor`.
fn next_page(query: &str, cursor: &str, limit: Option<u32>) -> String {
    let mut out = form_urlencoded::Serializer::new(query.to_owned());
    if let Some(limit) = limit.filter(|limit| *limit != PAGE) {
        out.append_pair("limit", &limit.to_string());
    }
    out.append_pair("cursor", cursor);
    out.finish()
}

/// The filters, as a GET form (a filtered list is a link one can share).
pub fn filter_form(selection: &EventSelection, endpoints: &[String]) -> Markup {
    let chosen = |value: &Option<String>, option: &str| {
        value
            .as_deref()
            .is_some_and(|v| v.eq_ignore_ascii_case(option))
    };
    html! {
        form.filters method="get" action="/ui/events" {
            label for="f-status" { "Status"
                select #f-status name="status" {
                    option value="" { "any" }
                    @for option in ["accepted", "processed", "failed"] {
                        option value=(option) selected[chosen(&selection.status, option)] { (option) }
                    }
                }
            }
            label for="f-endpoint" { "Endpoint"
                select #f-endpoint name="endpoint" {
                    option value="" { "any" }
                    @for endpoint in endpoints {
                        option value=(endpoint) selected[chosen(&selection.endpoint, endpoint)] { (endpoint) }
                    }
                }
            }
            label for="f-type" { "Type"
                input #f-type type="text" name="type" value=[selection.event_type.as_deref()];
            }
            label for="f-event-id" { "Provider event id"
                input #f-event-id type="text" name="event_id" value=[selection.event_id.as_deref()];
            }
            label for="f-since" { "Received from (UTC)"
                input #f-since type="text" name="since" placeholder="2026-12-01T13:55" value=[selection.since.as_deref()];
            }
            label for="f-before" { "Received before (UTC)"
                input #f-before type="text" name="before" placeholder="2026-12-01T14:55" value=[selection.before.as_deref()];
            }
            button.primary type="submit" { "Filter" }
        }
    }
}
