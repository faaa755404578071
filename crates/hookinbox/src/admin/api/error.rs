//! The admin listener's one error shape: a status code and
//! `{"error":"<code>","message":"<for a person>"}`, for the API and for
//! every refusal of the listener itself (the `Host` check, the cross-site
//! check, the token, an unknown route or method), so a script reads every
//! failure the same way (`docs/architecture.md` §7). Bad input is a 4xx
//! that names the parameter; a failing database is a 503 whose cause stays
//! in the log, never in the answer (it can hold paths or addresses).

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hookinbox_store::StoreError;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::admin::cross_site::CrossSite;
use crate::event_selection::SelectionError;
use crate::json_line::JsonLine;

/// Why an admin API request was not answered.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A parameter or the body does not mean anything; the text names it.
    #[error("{message}")]
    BadRequest { status: StatusCode, message: String },
    #[error("no event {0}")]
    NoSuchEvent(String),
    /// Not a target of the running configuration.
    #[error("no target `{target}` on endpoint `{endpoint}` in the configuration")]
    NoSuchTarget { endpoint: String, target: String },
    /// Nothing to answer at this path (no route, or no key rings or
    /// metrics in this process); the text says which.
    #[error("{0}")]
    NotFound(&'static str),
    /// The route does not take this method.
    #[error("method not allowed on this route")]
    Method,
    /// The `Host` is not one the listener answers (`host_allowlist`).
    #[error("host not allowed; list it in admin.allowed_hosts")]
    HostNotAllowed,
    /// A token is configured and the request does not carry it.
    #[error("admin token required")]
    Unauthorized,
    /// A request that changes something came from another site, or as a
    /// form (`cross_site`).
    #[error(transparent)]
    CrossSite(#[from] CrossSite),
    /// The service failed in a way the client cannot fix; the text is
    /// for the client, the cause was logged.
    #[error("{0}")]
    Internal(&'static str),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The body of every error answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// `bad_request`, `not_found`, `method`, `misdirected`,
    /// `unauthorized`, `cross_site`, `content_type`, `unavailable` or
    /// `internal`.
    pub error: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::BadRequest {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }
}

impl From<SelectionError> for ApiError {
    fn from(error: SelectionError) -> ApiError {
        ApiError::bad_request(error.to_string())
    }
}

impl ApiError {
    /// The status, the error code and the message for the client; a store
    /// failure is logged here, with its cause, once per answer.
    pub fn answer(self) -> (StatusCode, &'static str, String) {
        match self {
            // A body of the wrong media type has the code of the
            // cross-site check's 415: one code per status for scripts.
            ApiError::BadRequest { status, message }
                if status == StatusCode::UNSUPPORTED_MEDIA_TYPE =>
            {
                (status, "content_type", message)
            }
            ApiError::BadRequest { status, message } => (status, "bad_request", message),
            ApiError::NoSuchEvent(id) => {
                (StatusCode::NOT_FOUND, "not_found", format!("no event {id}"))
            }
            other @ ApiError::NoSuchTarget { .. } => {
                (StatusCode::NOT_FOUND, "not_found", other.to_string())
            }
            ApiError::NotFound(what) => (StatusCode::NOT_FOUND, "not_found", what.to_owned()),
            other @ ApiError::Method => {
                (StatusCode::METHOD_NOT_ALLOWED, "method", other.to_string())
            }
            other @ ApiError::HostNotAllowed => (
                StatusCode::MISDIRECTED_REQUEST,
                "misdirected",
                other.to_string(),
            ),
            other @ ApiError::Unauthorized => {
                (StatusCode::UNAUTHORIZED, "unauthorized", other.to_string())
            }
            ApiError::CrossSite(refusal) => {
                let (status, code) = match refusal {
                    CrossSite::ForeignOrigin => (StatusCode::FORBIDDEN, "cross_site"),
                    CrossSite::FormMediaType => {
                        (StatusCode::UNSUPPORTED_MEDIA_TYPE, "content_type")
                    }
                };
                (status, code, refusal.to_string())
            }
            ApiError::Internal(what) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                what.to_owned(),
            ),
            ApiError::Store(error) => {
                let transient = matches!(
                    error,
                    StoreError::Unavailable(_) | StoreError::Overloaded | StoreError::Stopped
                );
                tracing::warn!(message = "Admin request failed in the store.", %error);
                if transient {
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "unavailable",
                        "storage unavailable; try again".to_owned(),
                    )
                } else {
                    (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "internal",
                        "the store could not answer; see the log".to_owned(),
                    )
                }
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let challenge = matches!(self, ApiError::Unauthorized);
        let (status, error, message) = self.answer();
        let mut response = (status, JsonLine(ErrorBody { error, message })).into_response();
        if challenge {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// `Query<T>` whose rejection is an [`ApiError`].
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|query| ApiQuery(query.0))
            .map_err(|rejection: QueryRejection| ApiError::BadRequest {
                status: rejection.status(),
                message: rejection.body_text(),
            })
    }
}

/// `Path<T>` whose rejection is an [`ApiError`].
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|path| ApiPath(path.0))
            .map_err(|rejection: PathRejection| ApiError::BadRequest {
                status: rejection.status(),
                message: rejection.body_text(),
            })
    }
}

/// `Json<T>` whose rejection is an [`ApiError`] (400, 415 or 422, as axum
/// decides).
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        axum::Json::<T>::from_request(request, state)
            .await
            .map(|json| ApiJson(json.0))
            .map_err(|rejection: JsonRejection| ApiError::BadRequest {
                status: rejection.status(),
                message: rejection.body_text(),
            })
    }
}
