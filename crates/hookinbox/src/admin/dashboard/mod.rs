//! The dashboard (docs/architecture.md §7): server-rendered HTML pages on the admin
//! listener, for people — the overview, the event list with the API's
//! filters, an event with its deliveries and attempts, replay with a
//! confirmation step, and a page per endpoint with its secret versions and
//! its targets' states, each with a pause or resume button.
//!
//! It works without JavaScript (there is none): links and forms only, the
//! stylesheet embedded in the binary. Every page reads through the same
//! calls as the admin API ([`super::api`]).
//!
//! Protection, beyond the listener's `Host` check against DNS rebinding:
//! - **Sign-in** ([`login`]): the admin token typed into a form starts a
//!   session ([`session`]): an `HttpOnly`, `SameSite=Strict` cookie. A
//!   request with the bearer token is let in too (scripts, curl).
//! - **CSRF**: every form that changes something carries the session's
//!   CSRF token, checked by the handler ([`Visitor::check_csrf`]); a
//!   request from another origin (`Origin`, `Sec-Fetch-Site`) is refused
//!   before that, by the listener's cross-site check, which the admin API
//!   shares ([`crate::admin::cross_site`]).
//! - **Headers**: a CSP without inline scripts or styles (`default-src
//!   'none'`), no framing, no sniffing, no referrer to other sites, and `no-store` on
//!   every page (they hold event data).

mod endpoints;
mod event;
mod event_table;
mod events;
mod layout;
mod login;
mod overview;
mod replay;
pub mod session;
mod targets;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use maud::{html, Markup};

use super::api::{ApiError, Operator};
use super::token::AdminToken;
use layout::Section;
use session::{Session, Sessions};

/// Where the dashboard lives on the admin listener.
pub const PREFIX: &str = "/ui";

/// Whether the dashboard serves `path` (`/`, and everything under
/// [`PREFIX`]): its errors are pages, and it signs browsers in itself.
pub fn serves(path: &str) -> bool {
    path == "/"
        || path
            .strip_prefix(PREFIX)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// What the pages work with.
#[derive(Clone)]
pub struct Dashboard {
    pub operator: Operator,
    pub token: Option<AdminToken>,
    pub sessions: Arc<Sessions>,
}

/// Who is asking: put in the request by [`sign_in_required`].
#[derive(Debug, Clone)]
pub enum Visitor {
    /// A browser with a session.
    Session(Session),
    /// A client that sent the bearer token: no cookie, so no CSRF to fear.
    Bearer,
}

impl Visitor {
    /// The session, for the page's sign-out form and CSRF fields.
    pub fn session(&self) -> Option<&Session> {
        match self {
            Visitor::Session(session) => Some(session),
            Visitor::Bearer => None,
        }
    }

    /// Refuses a form whose `csrf` is not the session's.
    pub fn check_csrf(&self, presented: &str) -> Result<(), PageError> {
        match self {
            Visitor::Bearer => Ok(()),
            Visitor::Session(session) if session.csrf_matches(presented) => Ok(()),
            Visitor::Session(_) => Err(PageError::Csrf),
        }
    }
}

/// The dashboard's routes (all under [`PREFIX`], and `/` sending there).
pub fn router(dashboard: Dashboard) -> Router {
    let signed_in = Router::new()
        .route("/ui", get(overview::page))
        .route("/ui/events", get(events::page))
        .route("/ui/events/{id}", get(event::page))
        .route(
            "/ui/events/{id}/replay",
            get(event::confirm_replay).post(event::replay),
        )
        .route("/ui/replay", get(replay::confirm).post(replay::replay))
        .route("/ui/endpoints", get(endpoints::index))
        .route("/ui/endpoints/{id}", get(endpoints::page))
        .route("/ui/targets/pause", axum::routing::post(targets::pause))
        .route("/ui/targets/resume", axum::routing::post(targets::resume))
        .route("/ui/logout", axum::routing::post(login::logout))
        .route_layer(middleware::from_fn_with_state(
            dashboard.clone(),
            sign_in_required,
        ));
    Router::new()
        .route("/", get(|| async { Redirect::to(PREFIX) }))
        .route("/ui/login", get(login::form).post(login::sign_in))
        .route("/ui/style.css", get(stylesheet))
        .route("/ui/favicon.svg", get(favicon))
        .merge(signed_in)
        .layer(middleware::from_fn(security_headers))
        .with_state(dashboard)
}

/// Lets in a request with a live session or the bearer token; sends a
/// browser without either to the sign-in form. (A request that changes
/// something from another origin never gets here: the listener's
/// cross-site check refused it.)
async fn sign_in_required(
    State(dashboard): State<Dashboard>,
    mut request: Request,
    next: Next,
) -> Response {
    let changes = !matches!(*request.method(), Method::GET | Method::HEAD);
    let headers = request.headers();
    let bearer = dashboard
        .token
        .as_ref()
        .is_some_and(|token| token.admits(headers.get(header::AUTHORIZATION)));
    let session = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(|header| dashboard.sessions.cookie_value(header))
        .and_then(|id| dashboard.sessions.get(id));
    let visitor = match (session, bearer) {
        (Some(session), _) => Visitor::Session(session),
        (None, true) => Visitor::Bearer,
        (None, false) if changes => return PageError::SignedOut.into_response(),
        (None, false) => return Redirect::to("/ui/login").into_response(),
    };
    request.extensions_mut().insert(visitor);
    next.run(request).await
}

/// The headers of every dashboard answer.
async fn security_headers(request: Request, next: Next) -> Response {
    let stylesheet = matches!(request.uri().path(), "/ui/style.css" | "/ui/favicon.svg");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let set = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // Not `no-referrer`: with it a browser sends `Origin: null` on
        // form posts, and the same-origin check needs the real one.
        (header::REFERRER_POLICY, "same-origin"),
        (
            header::CACHE_CONTROL,
            if stylesheet {
                "private, max-age=300"
            } else {
                "no-store"
            },
        ),
    ];
    for (name, value) in set {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The icon, so that a browser does not ask for `/favicon.ico` (behind
/// the token, so a 401 in its console).
async fn favicon() -> Response {
    (
        [(header::CONTENT_TYPE, "image/svg+xml")],
        include_str!("favicon.svg"),
    )
        .into_response()
}

async fn stylesheet() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("style.css"),
    )
        .into_response()
}

/// Why a page could not be shown.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("the form is out of date or came from another site; reload the page and try again")]
    Csrf,
    #[error("signed out; sign in again")]
    SignedOut,
    #[error("no endpoint {0}")]
    NoSuchEndpoint(String),
}

impl From<hookinbox_store::StoreError> for PageError {
    fn from(error: hookinbox_store::StoreError) -> PageError {
        PageError::Api(ApiError::Store(error))
    }
}

impl From<crate::event_selection::SelectionError> for PageError {
    fn from(error: crate::event_selection::SelectionError) -> PageError {
        PageError::Api(error.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            PageError::Api(error) => {
                let (status, _, message) = error.answer();
                (status, message)
            }
            other @ PageError::Csrf => (StatusCode::FORBIDDEN, other.to_string()),
            other @ PageError::SignedOut => (StatusCode::UNAUTHORIZED, other.to_string()),
            other @ PageError::NoSuchEndpoint(_) => (StatusCode::NOT_FOUND, other.to_string()),
        };
        let body = html! {
            p.error role="alert" { (message) }
            p { a href="/ui" { "Back to the overview" } }
        };
        let title = status.canonical_reason().unwrap_or("Error");
        (
            status,
            render(layout::page(title, Section::None, None, body)),
        )
            .into_response()
    }
}

/// A page as the answer.
pub fn render(markup: Markup) -> Html<String> {
    Html(markup.into_string())
}
