//! `POST /admin/events/{id}/replay` and `POST /admin/replay`: new
//! deliveries for events already delivered or failed (same inbox id, so
//! the same idempotency key downstream), to the targets whose
//! `event_types` and `filter` take each event under the running
//! configuration, or to one named target ([`crate::replay_routing`]). A
//! dry run counts and changes nothing.

use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::{ApiError, ApiJson, ApiPath, ApiQuery, ErrorBody, Operator};
use crate::clock;
use crate::event_replay;
use crate::event_selection::EventSelection;
use crate::json_line::JsonLine;
use crate::replay_routing::{ReplayRouting, ReplayRoutingError};

/// What a replay did, or (dry run) would select.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ReplayAnswer {
    pub dry_run: bool,
    /// Events selected.
    pub matched: u64,
    /// Events given new deliveries: the selected ones less those with a
    /// delivery still pending or in flight and those no target (or not
    /// the named one) takes now. 0 in a dry run.
    pub replayed: u64,
}

#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct DryRunParams {
    /// Only say whether the event exists; change nothing.
    pub dry_run: bool,
    /// Replay to this target only (its `event_types` and `filter` still
    /// apply), e.g. one added after the event was accepted.
    pub target: Option<String>,
}

impl From<ReplayRoutingError> for ApiError {
    fn from(error: ReplayRoutingError) -> ApiError {
        ApiError::bad_request(format!("target: {error}"))
    }
}

/// Replays one event.
#[utoipa::path(
    post,
    path = "/admin/events/{id}/replay",
    tag = "events",
    params(("id" = String, Path, description = "The inbox id"), DryRunParams),
    responses(
        (status = 200, description = "Replayed (or, dry, found)", body = ReplayAnswer),
        (status = 400, description = "A parameter does not mean anything", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
        (status = 503, description = "The store is unavailable", body = ErrorBody),
    )
)]
pub async fn replay_one(
    State(operator): State<Operator>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(params): ApiQuery<DryRunParams>,
) -> Result<JsonLine<ReplayAnswer>, ApiError> {
    if operator.reads.show_event(&id, false).await?.is_none() {
        return Err(ApiError::NoSuchEvent(id));
    }
    let routing = ReplayRouting::new(operator.endpoints(), params.target.as_deref())?;
    let replayed = if params.dry_run {
        0
    } else {
        event_replay::replay_one(
            operator.store.as_ref(),
            operator.reads.as_ref(),
            &routing,
            &id,
            clock::unix_millis(),
        )
        .await?
        .len() as u64
    };
    Ok(JsonLine(ReplayAnswer {
        dry_run: params.dry_run,
        matched: 1,
        replayed,
    }))
}

/// Which events to replay.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayRequest {
    /// The events to replay, as `GET /admin/events` selects them; at least
    /// one filter (to replay every event, give a time range that holds them).
    /// A field this API does not know is refused, not ignored: a misspelt
    /// filter must not widen a replay.
    #[serde(deserialize_with = "EventSelection::deserialize_strict")]
    pub filter: EventSelection,
    /// Count the events and change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Replay to this target only (its `event_types` and `filter` still
    /// apply), e.g. one added after the events were accepted. Without it,
    /// each event goes to every target that takes it now.
    #[serde(default)]
    pub target: Option<String>,
}

/// Replays every event a filter selects, a page at a time.
#[utoipa::path(
    post,
    path = "/admin/replay",
    tag = "events",
    request_body = ReplayRequest,
    responses(
        (status = 200, description = "Replayed (or, dry, counted)", body = ReplayAnswer),
        (status = 400, description = "The filter does not mean anything, or is empty", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "The body is not a replay request", body = ErrorBody),
        (status = 503, description = "The store is unavailable", body = ErrorBody),
    )
)]
pub async fn replay_selected(
    State(operator): State<Operator>,
    ApiJson(request): ApiJson<ReplayRequest>,
) -> Result<JsonLine<ReplayAnswer>, ApiError> {
    Ok(JsonLine(
        run(
            &operator,
            &request.filter,
            request.target.as_deref(),
            request.dry_run,
        )
        .await?,
    ))
}

/// The replay of a selection, for this API and the dashboard.
pub async fn run(
    operator: &Operator,
    selection: &EventSelection,
    target: Option<&str>,
    dry_run: bool,
) -> Result<ReplayAnswer, ApiError> {
    if selection.is_empty() {
        return Err(ApiError::bad_request(
            "filter: give at least one filter (a replay of every event is a time range)",
        ));
    }
    let filter = selection.filter()?;
    let routing = ReplayRouting::new(operator.endpoints(), target)?;
    let count = event_replay::replay_selected(
        operator.store.as_ref(),
        operator.reads.as_ref(),
        &routing,
        &filter,
        dry_run,
        clock::unix_millis(),
        |_, _| {},
    )
    .await?;
    Ok(ReplayAnswer {
        dry_run,
        matched: count.matched,
        replayed: count.replayed,
    })
}
