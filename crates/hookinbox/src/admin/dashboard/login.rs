//! `/ui/login` and `/ui/logout`: the admin token typed into a form starts
//! a session; signing out ends it. Without a configured token (a loopback
//! listener may have none) the form only asks to continue: the session is
//! still needed, for the CSRF token of every form after it.

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::html;
use serde::Deserialize;

use super::layout::{self, Section};
use super::session::LIFETIME;
use super::{render, Dashboard, PageError, Visitor};

/// The sign-in form's fields.
#[derive(Debug, Deserialize)]
pub struct SignIn {
    #[serde(default)]
    token: String,
}

/// The sign-out form's fields.
#[derive(Debug, Deserialize)]
pub struct SignOut {
    #[serde(default)]
    csrf: String,
}

/// `GET /ui/login`
pub async fn form(State(dashboard): State<Dashboard>) -> Response {
    sign_in_page(&dashboard, None, StatusCode::OK)
}

fn sign_in_page(dashboard: &Dashboard, refused: Option<&str>, status: StatusCode) -> Response {
    let body = html! {
        @if let Some(refused) = refused {
            p.error role="alert" { (refused) }
        }
        form method="post" action="/ui/login" {
            @if dashboard.token.is_some() {
                p {
                    label for="token" { "Admin token" }
                    br;
                    input #token type="password" name="token" required autocomplete="current-password" size="40";
                }
            } @else {
                p { "This admin listener has no token configured: anyone who can reach it may continue." }
            }
            p { button.primary type="submit" { "Sign in" } }
        }
    };
    (
        status,
        render(layout::page("Sign in", Section::None, None, body)),
    )
        .into_response()
}

/// `POST /ui/login`: a session for the right token, the form again (401)
/// for a wrong one.
pub async fn sign_in(State(dashboard): State<Dashboard>, Form(form): Form<SignIn>) -> Response {
    if let Some(token) = &dashboard.token {
        let presented = HeaderValue::from_str(&format!("Bearer {}", form.token)).ok();
        if !token.admits(presented.as_ref()) {
            return sign_in_page(
                &dashboard,
                Some("That is not the admin token."),
                StatusCode::UNAUTHORIZED,
            );
        }
    }
    let Some((id, _)) = dashboard.sessions.start() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "no randomness for a session",
        )
            .into_response();
    };
    let cookie = format!(
        "{}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        dashboard.sessions.cookie(),
        LIFETIME.as_secs()
    );
    ([(header::SET_COOKIE, cookie)], Redirect::to(super::PREFIX)).into_response()
}

/// `POST /ui/logout`: ends the session (with its CSRF token) and clears
/// the cookie.
pub async fn logout(
    State(dashboard): State<Dashboard>,
    Extension(visitor): Extension<Visitor>,
    headers: axum::http::HeaderMap,
    Form(form): Form<SignOut>,
) -> Result<Response, PageError> {
    visitor.check_csrf(&form.csrf)?;
    let id = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(|header| dashboard.sessions.cookie_value(header));
    if let Some(id) = id {
        dashboard.sessions.end(id);
    }
    let cleared = format!(
        "{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0",
        dashboard.sessions.cookie()
    );
    Ok(([(header::SET_COOKIE, cleared)], Redirect::to("/ui/login")).into_response())
}
