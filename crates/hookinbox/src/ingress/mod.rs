//! The public listener's routes: `/hooks/{endpoint_id}` and a liveness probe.
//! Whatever else arrives (another path, another method on `/healthz`) is
//! answered by the same code as a refused webhook ([`receive::answer`]):
//! the JSON of the contract, charged to the client's refusal limit, its
//! body drained (`docs/architecture.md` §2).

mod audit_headers;
pub mod body;
pub mod body_budget;
pub mod body_pace;
pub mod client_address;
pub mod client_refusals;
mod handover;
mod receive;
pub mod refusal_log;
pub mod rejection;
#[cfg(test)]
mod tests;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, Request};
use axum::response::Response;
use axum::routing::{any, get};
use axum::Router;

use crate::app_state::AppState;
use receive::Target;
use rejection::Rejection;

/// The public router. Tests drive it with `oneshot` without a socket.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/hooks/{endpoint_id}", any(receive::receive))
        .route(
            "/healthz",
            get(|| async { "ok" }).fallback(healthz_other_method),
        )
        .fallback(not_found)
        .with_state(state)
}

async fn not_found(State(state): State<AppState>, request: Request<Body>) -> Response {
    receive::answer(&state, Target::Refused(Rejection::NotFound), request).await
}

async fn healthz_other_method(State(state): State<AppState>, request: Request<Body>) -> Response {
    let mut response = receive::answer(&state, Target::Refused(Rejection::Method), request).await;
    if response.headers().contains_key(header::ALLOW) {
        // `Rejection::Method` names POST, the method of `/hooks/…`.
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    response
}
