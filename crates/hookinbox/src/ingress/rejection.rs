//! The one mapping from ingress outcomes to HTTP (docs/architecture.md §2): status
//! codes, `Retry-After`, and the closed set of reason strings.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hookinbox_store::StoreError;
use hookinbox_verify::Reason;
use serde_json::json;

use crate::json_line::JsonLine;

/// `Retry-After` when storage is in trouble (a failed or timed-out commit):
/// a full or frozen disk seldom heals within a second.
const STORAGE_RETRY_AFTER_SECONDS: u64 = 5;

/// `Retry-After` when no secret version of the endpoint is inside its
/// window: a rotation left a gap, which takes an operator (or the next
/// version's `not_before`) to close. Providers back off further on their own.
const NO_ACTIVE_SECRET_RETRY_AFTER_SECONDS: u64 = 60;

/// Every way ingress refuses a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Not a POST.
    Method,
    /// No endpoint with that id (404 `not_found`, docs/architecture.md §2).
    NotFound,
    /// The endpoint's rate limit is exhausted.
    RateLimited { retry_after_seconds: u64 },
    /// Declared or streamed body larger than the endpoint allows.
    TooLarge,
    /// Media type not accepted by the endpoint.
    ContentType,
    /// Verification refused the request.
    Verification(Reason),
    /// The body ended before its declared length (the client went away).
    BodyIncomplete,
    /// The body did not arrive in time (see `body_pace`).
    Timeout,
    /// Same event id, different body.
    Conflict,
    /// Storage unavailable, commit outcome unknown, or overloaded.
    Unavailable { retry_after_seconds: u64 },
    /// No secret version of the endpoint is inside its validity window, so
    /// no request can be verified: the service's trouble, not the sender's.
    /// A retryable 503, never a 401 (the provider would count it as its
    /// own failure, and may disable the webhook), and never an acceptance.
    NoActiveSecret,
}

impl Rejection {
    pub fn status(self) -> StatusCode {
        match self {
            Rejection::Method => StatusCode::METHOD_NOT_ALLOWED,
            Rejection::NotFound => StatusCode::NOT_FOUND,
            Rejection::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Rejection::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Rejection::ContentType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Rejection::Verification(reason) => match reason {
                Reason::MissingSignature
                | Reason::MalformedSignature
                | Reason::Signature
                | Reason::Timestamp => StatusCode::UNAUTHORIZED,
                Reason::MissingEventId | Reason::MalformedBody => StatusCode::BAD_REQUEST,
            },
            Rejection::BodyIncomplete => StatusCode::BAD_REQUEST,
            Rejection::Timeout => StatusCode::REQUEST_TIMEOUT,
            Rejection::Conflict => StatusCode::CONFLICT,
            Rejection::Unavailable { .. } | Rejection::NoActiveSecret => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    /// The reason string on the wire.
    pub fn reason(self) -> &'static str {
        match self {
            Rejection::Method => "method",
            Rejection::NotFound => "not_found",
            Rejection::RateLimited { .. } => "rate_limited",
            Rejection::TooLarge => "too_large",
            Rejection::ContentType => "content_type",
            Rejection::Verification(reason) => reason.as_str(),
            Rejection::BodyIncomplete => "malformed_body",
            Rejection::Timeout => "timeout",
            Rejection::Conflict => "conflict",
            Rejection::Unavailable { .. } | Rejection::NoActiveSecret => "unavailable",
        }
    }

    /// The answer when the service has no room for the request now (body
    /// budget spent, commit queue full): come back in a second.
    pub fn overloaded() -> Rejection {
        Rejection::Unavailable {
            retry_after_seconds: 1,
        }
    }

    /// The answer when the commit failed: nothing was acknowledged, so the
    /// provider must retry — soon if the commit queue was merely full, later
    /// if the storage itself is in trouble.
    pub fn storage(error: &StoreError) -> Rejection {
        match error {
            StoreError::Overloaded => Rejection::overloaded(),
            _ => Rejection::Unavailable {
                retry_after_seconds: STORAGE_RETRY_AFTER_SECONDS,
            },
        }
    }

    /// The answer when the commit did not return within
    /// `storage.commit_timeout`: its outcome is unknown, and the provider's
    /// retry finds the event as a duplicate or stores it.
    pub fn commit_timed_out() -> Rejection {
        Rejection::Unavailable {
            retry_after_seconds: STORAGE_RETRY_AFTER_SECONDS,
        }
    }

    /// Whether the client is to blame and has not proved who it is: such
    /// refusals charge its per-client limit (`client_refusals`). Verified
    /// requests (a conflict included) and the service's own trouble never do.
    pub fn charges_client(self) -> bool {
        match self {
            Rejection::Method
            | Rejection::NotFound
            | Rejection::TooLarge
            | Rejection::ContentType
            | Rejection::Verification(_)
            | Rejection::BodyIncomplete
            | Rejection::Timeout => true,
            Rejection::RateLimited { .. }
            | Rejection::Conflict
            | Rejection::Unavailable { .. }
            | Rejection::NoActiveSecret => false,
        }
    }

    fn retry_after_seconds(self) -> Option<u64> {
        match self {
            Rejection::RateLimited {
                retry_after_seconds,
            }
            | Rejection::Unavailable {
                retry_after_seconds,
            } => Some(retry_after_seconds.max(1)),
            Rejection::NoActiveSecret => Some(NO_ACTIVE_SECRET_RETRY_AFTER_SECONDS),
            _ => None,
        }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let mut response = (
            self.status(),
            JsonLine(json!({"accepted": false, "error": self.reason()})),
        )
            .into_response();
        let headers = response.headers_mut();
        if let Some(seconds) = self.retry_after_seconds() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self == Rejection::Method {
            headers.insert(header::ALLOW, HeaderValue::from_static("POST"));
        }
        response
    }
}

/// The answers to an accepted or ignored event.
pub enum Acceptance {
    /// Committed now, or found already committed (`duplicate`).
    Accepted { id: String, duplicate: bool },
    /// Verified, of a type the endpoint does not store: acknowledged so the
    /// provider stops retrying.
    Ignored,
}

impl IntoResponse for Acceptance {
    fn into_response(self) -> Response {
        match self {
            Acceptance::Accepted { id, duplicate } => (
                StatusCode::OK,
                JsonLine(json!({"accepted": true, "duplicate": duplicate, "id": id})),
            )
                .into_response(),
            Acceptance::Ignored => (
                StatusCode::OK,
                JsonLine(json!({"accepted": false, "ignored": true, "reason": "unsupported_type"})),
            )
                .into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_reasons_map_to_401_or_400() {
        for reason in Reason::ALL {
            let status = Rejection::Verification(reason).status();
            let expected = match reason {
                Reason::MissingEventId | Reason::MalformedBody => 400,
                _ => 401,
            };
            assert_eq!(status.as_u16(), expected, "{reason}");
            assert_eq!(Rejection::Verification(reason).reason(), reason.as_str());
        }
    }

    #[test]
    fn retryable_answers_carry_retry_after() {
        let response = Rejection::Unavailable {
            retry_after_seconds: 0,
        }
        .into_response();
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        let response = Rejection::RateLimited {
            retry_after_seconds: 3,
        }
        .into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "3");
    }

    /// A gap between secret versions is the service's trouble: retryable,
    /// never a 401, and it does not charge the client.
    #[test]
    fn no_active_secret_is_a_retryable_503() {
        let rejection = Rejection::NoActiveSecret;
        assert!(!rejection.charges_client());
        assert_eq!(rejection.reason(), "unavailable");
        let response = rejection.into_response();
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()[header::RETRY_AFTER], "60");
    }

    /// A full commit queue clears in a moment; a failed or stalled commit
    /// means storage trouble, which seldom heals within a second.
    #[test]
    fn storage_trouble_answers_503_with_a_retry_after_to_match() {
        let retry_after = |rejection: Rejection| {
            let response = rejection.into_response();
            assert_eq!(response.status(), 503);
            assert_eq!(rejection.reason(), "unavailable");
            response.headers()[header::RETRY_AFTER].clone()
        };
        assert_eq!(
            retry_after(Rejection::storage(&StoreError::Overloaded)),
            "1"
        );
        let failed = StoreError::Unavailable("disk I/O error".into());
        assert_eq!(retry_after(Rejection::storage(&failed)), "5");
        assert_eq!(retry_after(Rejection::storage(&StoreError::Stopped)), "5");
        assert_eq!(retry_after(Rejection::commit_timed_out()), "5");
    }

    async fn body(response: Response) -> Vec<u8> {
        axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap()
            .to_vec()
    }

    /// Each answer is one line of JSON: `curl` output ends before the prompt.
    #[tokio::test]
    async fn answers_are_one_line_of_json() {
        assert_eq!(
            body(Rejection::Conflict.into_response()).await,
            b"{\"accepted\":false,\"error\":\"conflict\"}\n"
        );
        let accepted = Acceptance::Accepted {
            id: "0193".into(),
            duplicate: true,
        };
        assert_eq!(
            body(accepted.into_response()).await,
            b"{\"accepted\":true,\"duplicate\":true,\"id\":\"0193\"}\n"
        );
        assert_eq!(
            body(Acceptance::Ignored.into_response()).await,
            b"{\"accepted\":false,\"ignored\":true,\"reason\":\"unsupported_type\"}\n"
        );
    }
}
