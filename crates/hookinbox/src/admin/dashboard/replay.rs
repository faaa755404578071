//! `/ui/replay`: replay every event a filter selects. The GET is the
//! confirmation step — a dry run says how many events match — and its
//! form, carrying the same filter and the CSRF token, does the replay.

use axum::extract::State;
use axum::response::Html;
use axum::{Extension, Form};
use maud::html;
use serde::Deserialize;

use super::layout::{self, Section};
use super::{render, Dashboard, PageError, Visitor};
use crate::admin::api::{replay_run, ApiQuery};
use crate::event_selection::EventSelection;

/// The replay form: the filter and the CSRF token.
#[derive(Debug, Deserialize)]
pub struct ReplayForm {
    #[serde(default)]
    csrf: String,
    #[serde(flatten)]
    selection: EventSelection,
}

/// `GET /ui/replay?…filter…`
pub async fn confirm(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
    ApiQuery(selection): ApiQuery<EventSelection>,
) -> Result<Html<String>, PageError> {
    let dry = replay_run(&dashboard.operator, &selection, None, true).await?;
    let body = html! {
        p {
            (dry.matched) " event(s) match "
            a href={ "/ui/events?" (selection.query_string()) } { "this filter" } ". "
            "Each is sent again to the targets whose event types and filter take it under the running configuration, with its inbox id as the idempotency key. "
            "Events with a delivery still pending or in flight are left as they are."
        }
        @if dry.matched > 0 {
            form method="post" action="/ui/replay" {
                @if let Some(session) = visitor.session() {
                    input type="hidden" name="csrf" value=(session.csrf);
                }
                @for (name, value) in selection.fields() {
                    input type="hidden" name=(name) value=(value);
                }
                button.danger type="submit" { "Replay " (dry.matched) " event(s)" }
                " "
                a href={ "/ui/events?" (selection.query_string()) } { "Cancel" }
            }
        }
    };
    Ok(render(layout::page(
        "Replay events",
        Section::Events,
        visitor.session(),
        body,
    )))
}

/// `POST /ui/replay`
pub async fn replay(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
    Form(form): Form<ReplayForm>,
) -> Result<Html<String>, PageError> {
    visitor.check_csrf(&form.csrf)?;
    let done = replay_run(&dashboard.operator, &form.selection, None, false).await?;
    let body = html! {
        p.notice role="status" {
            "Replayed " (done.replayed) " of " (done.matched) " matching event(s)."
            @if done.replayed < done.matched { " The others had a delivery pending or in flight, or no target takes them now." }
        }
        p { a href={ "/ui/events?" (form.selection.query_string()) } { "Back to the events" } }
    };
    Ok(render(layout::page(
        "Replay events",
        Section::Events,
        visitor.session(),
        body,
    )))
}
