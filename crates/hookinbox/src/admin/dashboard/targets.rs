//! `POST /ui/targets/pause` and `POST /ui/targets/resume`: the buttons in
//! the targets table of an endpoint's page. A form carries the endpoint,
//! the target and the session's CSRF token; the change is the admin API's
//! ([`crate::admin::api::target_change`]: checked against the running
//! configuration, stored, logged), then the browser goes back to the
//! endpoint's page, which says what was done.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use serde::Deserialize;

use super::{Dashboard, PageError, Visitor};
use crate::admin::api::target_change;
use crate::target_pause::{PauseAction, Requester};

/// The pause and resume forms' fields.
#[derive(Debug, Deserialize)]
pub struct TargetForm {
    #[serde(default)]
    csrf: String,
    endpoint: String,
    target: String,
}

/// `POST /ui/targets/pause`
pub async fn pause(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
    Form(form): Form<TargetForm>,
) -> Result<Response, PageError> {
    change(&dashboard, &visitor, &form, PauseAction::Pause).await
}

/// `POST /ui/targets/resume`
pub async fn resume(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
    Form(form): Form<TargetForm>,
) -> Result<Response, PageError> {
    change(&dashboard, &visitor, &form, PauseAction::Resume).await
}

async fn change(
    dashboard: &Dashboard,
    visitor: &Visitor,
    form: &TargetForm,
    action: PauseAction,
) -> Result<Response, PageError> {
    visitor.check_csrf(&form.csrf)?;
    target_change(
        &dashboard.operator,
        &form.endpoint,
        &form.target,
        action,
        Requester::Dashboard,
    )
    .await?;
    // Endpoint ids are letters, digits, `-`, `_` and `.`: safe in a path.
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair(action.done(), &form.target)
        .finish();
    Ok(Redirect::to(&format!("/ui/endpoints/{}?{query}", form.endpoint)).into_response())
}
