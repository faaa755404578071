//! `GET /admin/targets` and `POST /admin/targets/{endpoint}/{target}/pause`
//! (`…/resume`): every configured target's state — closed, open, half_open
//! or paused, as `hookinbox targets list` and `hookinbox_target_state` read
//! it — and the operator's pause and resume, as `hookinbox targets
//! pause|resume` do them ([`crate::target_pause`]). The pause is stored in
//! the database, so every process honours it at its next lease.

use std::sync::Arc;

use axum::extract::State;
use serde::Serialize;

use super::{ApiError, ApiPath, ErrorBody, Operator};
use crate::clock;
use crate::delivery::target_states::{TargetStateRow, TargetStates};
use crate::json_line::JsonLine;
use crate::target_pause::{PauseAction, Requester, TargetPause, TargetPauseError};

/// The configured targets' states.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TargetsAnswer {
    /// By endpoint id, then in configuration order.
    pub targets: Vec<TargetStateRow>,
}

/// What a pause or a resume did.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TargetChangeAnswer {
    /// Whether this request changed the target: `false` when it was
    /// already paused (pause) or was not paused (resume).
    pub changed: bool,
    /// The target's state after the request.
    pub target: TargetStateRow,
}

impl From<TargetPauseError> for ApiError {
    fn from(error: TargetPauseError) -> ApiError {
        match error {
            TargetPauseError::NotConfigured { endpoint, target } => {
                ApiError::NoSuchTarget { endpoint, target }
            }
            TargetPauseError::Store(error) => ApiError::Store(error),
        }
    }
}

/// The running configuration's (endpoint, target) pairs: endpoints by id,
/// each one's targets in configuration order.
pub fn configured_targets(operator: &Operator) -> Vec<(String, String)> {
    let mut endpoints: Vec<_> = operator.endpoints().values().collect();
    endpoints.sort_by(|a, b| a.id.cmp(&b.id));
    endpoints
        .into_iter()
        .flat_map(|endpoint| {
            endpoint
                .targets
                .iter()
                .map(|target| (endpoint.id.clone(), target.name.clone()))
        })
        .collect()
}

/// Every configured target's state.
#[utoipa::path(
    get,
    path = "/admin/targets",
    tag = "targets",
    responses(
        (status = 200, description = "The targets' states", body = TargetsAnswer),
        (status = 503, description = "The store is unavailable", body = ErrorBody),
    )
)]
pub async fn list(State(operator): State<Operator>) -> Result<JsonLine<TargetsAnswer>, ApiError> {
    let states =
        TargetStates::read_for(&configured_targets(&operator), operator.reads.as_ref()).await?;
    Ok(JsonLine(TargetsAnswer {
        targets: states.rows,
    }))
}

/// Pauses a target: its deliveries wait (no attempt, no budget spent,
/// `max_age` not counted) until it is resumed.
#[utoipa::path(
    post,
    path = "/admin/targets/{endpoint}/{target}/pause",
    tag = "targets",
    params(
        ("endpoint" = String, Path, description = "The endpoint id"),
        ("target" = String, Path, description = "The target's name"),
    ),
    responses(
        (status = 200, description = "Paused (or already paused)", body = TargetChangeAnswer),
        (status = 404, description = "No such target in the configuration", body = ErrorBody),
        (status = 503, description = "The store is unavailable", body = ErrorBody),
    )
)]
pub async fn pause(
    State(operator): State<Operator>,
    ApiPath((endpoint, target)): ApiPath<(String, String)>,
) -> Result<JsonLine<TargetChangeAnswer>, ApiError> {
    let answer = change(
        &operator,
        &endpoint,
        &target,
        PauseAction::Pause,
        Requester::AdminApi,
    )
    .await?;
    Ok(JsonLine(answer))
}

/// Resumes a paused target: its waiting deliveries go, in order.
#[utoipa::path(
    post,
    path = "/admin/targets/{endpoint}/{target}/resume",
    tag = "targets",
    params(
        ("endpoint" = String, Path, description = "The endpoint id"),
        ("target" = String, Path, description = "The target's name"),
    ),
    responses(
        (status = 200, description = "Resumed (or was not paused)", body = TargetChangeAnswer),
        (status = 404, description = "No such target in the configuration", body = ErrorBody),
        (status = 503, description = "The store is unavailable", body = ErrorBody),
    )
)]
pub async fn resume(
    State(operator): State<Operator>,
    ApiPath((endpoint, target)): ApiPath<(String, String)>,
) -> Result<JsonLine<TargetChangeAnswer>, ApiError> {
    let answer = change(
        &operator,
        &endpoint,
        &target,
        PauseAction::Resume,
        Requester::AdminApi,
    )
    .await?;
    Ok(JsonLine(answer))
}

/// A pause or resume for this API and the dashboard, and the target's
/// state after it.
pub async fn change(
    operator: &Operator,
    endpoint: &str,
    target: &str,
    action: PauseAction,
    requester: Requester,
) -> Result<TargetChangeAnswer, ApiError> {
    let configured = configured_targets(operator);
    let Some(gates) = Arc::clone(&operator.store).target_gates() else {
        return Err(ApiError::NotFound(
            "this process's store cannot pause targets",
        ));
    };
    let changed = TargetPause {
        endpoint,
        target,
        action,
        requester,
    }
    .apply(&configured, gates.as_ref(), clock::unix_millis())
    .await?;
    let pair = [(endpoint.to_owned(), target.to_owned())];
    let state = TargetStates::read_for(&pair, operator.reads.as_ref())
        .await?
        .rows
        .pop()
        .ok_or(ApiError::Internal("the target's state could not be read"))?;
    Ok(TargetChangeAnswer {
        changed,
        target: state,
    })
}
