//! `GET /ui/events/{id}`: one event, its deliveries (one per target and
//! replay generation) and their attempts with masked errors; the payload
//! and the audit headers only when asked (`?payload=1`). Replay goes
//! through a confirmation page (`GET …/replay`) to a form (`POST …/replay`).

use axum::extract::State;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use hookinbox_store::{DeliveryView, EventDetail};
use maud::{html, Markup};
use serde::Deserialize;

use super::layout::{self, ago, status, utc, Section};
use super::{render, Dashboard, PageError, Visitor};
use crate::admin::api::{ApiError, ApiPath, ApiQuery};
use crate::clock;
use crate::event_replay;
use crate::replay_routing::ReplayRouting;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Shown {
    /// `1`: show the raw body and the audit headers.
    payload: Option<String>,
    /// `1`: the page after a replay.
    replayed: Option<String>,
}

/// The replay form's fields.
#[derive(Debug, Deserialize)]
pub struct ReplayForm {
    #[serde(default)]
    csrf: String,
    /// Empty: every target that takes the event now; else this one only.
    #[serde(default)]
    target: String,
}

async fn load(
    dashboard: &Dashboard,
    id: &str,
    with_payload: bool,
) -> Result<(EventDetail, Option<bytes::Bytes>), PageError> {
    dashboard
        .operator
        .reads
        .show_event(id, with_payload)
        .await?
        .ok_or_else(|| PageError::Api(ApiError::NoSuchEvent(id.to_owned())))
}

pub async fn page(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(shown): ApiQuery<Shown>,
) -> Result<Html<String>, PageError> {
    let with_payload = shown.payload.as_deref() == Some("1");
    let (event, raw) = load(&dashboard, &id, with_payload).await?;
    let headers = if with_payload {
        dashboard.operator.reads.audit_headers(&id).await?
    } else {
        None
    };
    let now = clock::unix_millis();
    let summary = &event.summary;
    let body = html! {
        @if shown.replayed.as_deref() == Some("1") {
            p.notice role="status" { "Replayed: new deliveries are pending; this page shows their progress when reloaded." }
        }
        dl.fields {
            dt { "Status" } dd { (status(&summary.status)) }
            dt { "Endpoint" } dd { a href={ "/ui/endpoints/" (summary.endpoint_id) } { (summary.endpoint_id) } " (" (summary.provider) ")" }
            dt { "Provider event id" } dd.mono { (summary.provider_event_id) }
            dt { "Type" } dd { (summary.event_type.as_deref().unwrap_or("—")) }
            dt { "Received" } dd { (utc(summary.received_at_ms)) " (" (ago(summary.received_at_ms, now)) ")" }
            dt { "Inbox id" } dd.mono { (summary.id) }
            @if let Some(object) = &event.object_id {
                dt { "Object" } dd.mono { (object) @if let Some(v) = event.object_version { ", version " (v) } }
            }
            dt { "Payload" } dd {
                @match event.payload_bytes {
                    Some(bytes) => { (bytes) " bytes, " (event.content_type.as_deref().unwrap_or("no content type")) }
                    None => { "purged by retention" }
                }
            }
            dt { "Secret version" } dd { (event.matched_secret_version) }
            @if let Some(trace_id) = &event.trace_id {
                dt { "Trace id" } dd.mono { (trace_id) }
            }
            @if !event.not_routed.is_empty() {
                dt { "Routed to" } dd { (routed_to(&event)) }
                dt { "Not routed" } dd { (event.not_routed.join(", ")) }
            }
        }
        p {
            a.button href={ "/ui/events/" (summary.id) "/replay" } { "Replay…" }
            " "
            @if !with_payload && event.payload_bytes.is_some() {
                a href={ "/ui/events/" (summary.id) "?payload=1" } { "Show the payload and headers" }
            }
        }
        h2 { "Deliveries" }
        @if event.deliveries.is_empty() {
            @if event.not_routed.is_empty() {
                p { "No deliveries: the endpoint had no targets when the event arrived." }
            } @else {
                p { "No deliveries: no target matched (their event_types or filter did not take it)." }
            }
        }
        @for delivery in &event.deliveries {
            (delivery_table(delivery, now))
        }
        @if with_payload {
            h2 { "Request headers kept for audit" }
            @if let Some(headers) = &headers {
                table {
                    caption { "Headers" }
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Value" } } }
                    tbody { @for (name, value) in headers { tr { td.mono { (name) } td.mono { (value) } } } }
                }
            }
            h2 { "Payload" }
            @match &raw {
                Some(bytes) => { pre { code { (String::from_utf8_lossy(bytes)) } } }
                None => { p { "Purged by retention." } }
            }
        }
    };
    Ok(render(layout::page(
        &format!("Event {}", summary.provider_event_id),
        Section::Events,
        visitor.session(),
        body,
    )))
}

fn delivery_table(delivery: &DeliveryView, now: i64) -> Markup {
    html! {
        table {
            caption {
                "To " (delivery.target) ", generation " (delivery.generation) ": "
                (status(&delivery.status)) ", " (delivery.attempts) " attempt(s)"
                @if let Some(at) = delivery.delivered_at_ms { ", delivered " (utc(at)) }
                @else if matches!(delivery.status.as_str(), "PENDING" | "LEASED") {
                    ", next try " (ago(delivery.next_attempt_at_ms, now))
                }
                @if let Some(error) = &delivery.last_error { ", last error: " (error) }
            }
            thead { tr {
                th scope="col" { "Attempt" } th scope="col" { "Finished" }
                th scope="col" { "Outcome" } th scope="col" { "Error" }
            } }
            tbody {
                @if delivery.attempt_log.is_empty() {
                    tr { td colspan="4" { "No attempt yet." } }
                }
                @for attempt in &delivery.attempt_log {
                    tr {
                        td { (attempt.attempt) }
                        td { (utc(attempt.finished_at_ms)) }
                        td { (status(&attempt.outcome)) }
                        td { (attempt.error.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
    }
}

/// `GET /ui/events/{id}/replay`: what a replay does, and the form that does it.
pub async fn confirm_replay(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
    ApiPath(id): ApiPath<String>,
) -> Result<Html<String>, PageError> {
    let (event, _) = load(&dashboard, &id, false).await?;
    let summary = &event.summary;
    let in_flight = event
        .deliveries
        .iter()
        .any(|d| matches!(d.status.as_str(), "PENDING" | "LEASED"));
    // Routing is evaluated again against the running configuration
    // (docs/delivery.md, "Replay"); planning it changes nothing.
    let endpoints = dashboard.operator.endpoints();
    let routing = ReplayRouting::new(endpoints, None).map_err(ApiError::from)?;
    let plan = routing
        .plan(dashboard.operator.reads.as_ref(), &summary.id)
        .await
        .map_err(ApiError::from)?;
    let targets = plan.map(|route| route.deliver_to).unwrap_or_default();
    let configured: Vec<&str> = endpoints
        .get(&summary.endpoint_id)
        .map(|endpoint| endpoint.targets.iter().map(|t| t.name.as_str()).collect())
        .unwrap_or_default();
    let body = html! {
        p {
            "Event " code { (summary.provider_event_id) } " (" (status(&summary.status)) ") on "
            (summary.endpoint_id) " will be sent again to the targets whose event types and filter take it under the running configuration: "
            @if targets.is_empty() { "none (a replay now would change nothing)" } @else { (targets.join(", ")) }
            ". It keeps its inbox id, so targets see the same idempotency key."
        }
        @if in_flight {
            p.error role="alert" { "A delivery of this event is still pending or in flight: a replay now would change nothing." }
        }
        form method="post" action={ "/ui/events/" (summary.id) "/replay" } {
            @if let Some(session) = visitor.session() {
                input type="hidden" name="csrf" value=(session.csrf);
            }
            label {
                "Send to "
                select name="target" {
                    option value="" selected { "every target that takes it now" }
                    @for name in &configured {
                        option value=(name) { "only " (name) }
                    }
                }
            }
            " "
            button.danger type="submit" { "Replay this event" }
            " "
            a href={ "/ui/events/" (summary.id) } { "Cancel" }
        }
    };
    Ok(render(layout::page(
        "Replay an event",
        Section::Events,
        visitor.session(),
        body,
    )))
}

/// `POST /ui/events/{id}/replay`
pub async fn replay(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
    ApiPath(id): ApiPath<String>,
    Form(form): Form<ReplayForm>,
) -> Result<Response, PageError> {
    visitor.check_csrf(&form.csrf)?;
    load(&dashboard, &id, false).await?;
    let only_target = Some(form.target.as_str()).filter(|name| !name.is_empty());
    let routing =
        ReplayRouting::new(dashboard.operator.endpoints(), only_target).map_err(ApiError::from)?;
    event_replay::replay_one(
        dashboard.operator.store.as_ref(),
        dashboard.operator.reads.as_ref(),
        &routing,
        &id,
        clock::unix_millis(),
    )
    .await
    .map_err(ApiError::from)?;
    Ok(Redirect::to(&format!("/ui/events/{id}?replayed=1")).into_response())
}

/// The targets routing sent the event to, or that none took it.
fn routed_to(event: &EventDetail) -> String {
    match event.routed_to.as_deref() {
        Some(routed) if !routed.is_empty() => routed.join(", "),
        _ => "no target matched".to_owned(),
    }
}
