//! The public listener's routes: `/hooks/{endpoint_id}` and a liveness probe.

mod audit_headers;
pub mod body;
pub mod body_budget;
pub mod body_pace;
pub mod client_address;
pub mod client_refusals;
mod receive;
pub mod refusal_log;
pub mod rejection;
#[cfg(test)]
mod tests;

use axum::routing::{any, get};
use axum::Router;

use crate::app_state::AppState;
use rejection::Rejection;

/// The public router. Tests drive it with `oneshot` without a socket.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/hooks/{endpoint_id}", any(receive::receive))
        .route("/healthz", get(|| async { "ok" }))
        .fallback(|| async { Rejection::NotFound })
        .with_state(state)
}
