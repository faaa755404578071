//! `/admin/keys…`: the endpoints' key rings, behind the admin token.
//!
//! - `POST /admin/keys/reload` runs a key reload ([`crate::secrets::key_reload`]),
//!   as SIGHUP does, and answers its report: which endpoints' rings were
//!   replaced, what could not be read (by field), and whether the file
//!   changes something that needs a restart. `hookinbox keys reload` calls it.
//! - `GET /admin/keys` answers [`KeysStatus`]: each endpoint's secret
//!   versions, their windows, and the requests each verified in the last
//!   24 hours in this process. `hookinbox keys status` shows it.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use super::api::ApiError;
use crate::clock;
use crate::json_line::JsonLine;
use crate::secrets::key_reload::KeyReloader;
use crate::secrets::key_status::KeysStatus;

/// What a process without key rings (`work`) answers, as a 404.
const NO_KEY_RINGS: &str = "no key rings in this process";

/// `GET /admin/keys`: the key rings in use now.
pub async fn status(State(keys): State<Option<Arc<KeyReloader>>>) -> Response {
    let Some(keys) = keys else {
        return ApiError::NotFound(NO_KEY_RINGS).into_response();
    };
    JsonLine(KeysStatus::of(keys.endpoints(), clock::unix_seconds())).into_response()
}

/// `POST /admin/keys/reload`: 200 with the report (whether or not every
/// source could be read), 404 when this process has no key rings (`work`).
pub async fn reload(State(keys): State<Option<Arc<KeyReloader>>>) -> Response {
    let Some(keys) = keys else {
        return ApiError::NotFound(NO_KEY_RINGS).into_response();
    };
    // Reading secret files and the configuration is blocking I/O.
    match tokio::task::spawn_blocking(move || keys.reload_keys()).await {
        Ok(report) => JsonLine(report).into_response(),
        Err(_) => ApiError::Internal("the reload did not finish").into_response(),
    }
}
