//! JSON answers that end with a newline, so `curl` output does not run into
//! the shell prompt and line-oriented tools see one answer per line. Every
//! JSON body the public and admin listeners write goes through
//! [`JsonLine`].

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// `T` as a JSON body followed by `\n`, with `Content-Type: application/json`.
pub struct JsonLine<T>(pub T);

impl<T: Serialize> IntoResponse for JsonLine<T> {
    fn into_response(self) -> Response {
        let mut body = Vec::with_capacity(128);
        if let Err(error) = serde_json::to_writer(&mut body, &self.0) {
            // Not reachable with the answers hookinbox writes (maps with
            // string keys); answered as axum's `Json` would.
            tracing::error!(message = "Could not serialise an answer.", %error);
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        body.push(b'\n');
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_body_is_compact_json_and_a_newline() {
        let response = JsonLine(serde_json::json!({"accepted": true, "id": "a"})).into_response();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        assert_eq!(&body[..], b"{\"accepted\":true,\"id\":\"a\"}\n");
    }
}
