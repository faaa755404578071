//! What `handler(webhook)` is given and what its answer becomes: Svix's
//! shape (`method`, `url`, `payload`, `headers`, and `cancel` on the way
//! out), with the event's metadata beside it.

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::error::TransformError;
use crate::form_body;

/// The request as it would be sent without the transform, and the event.
#[derive(Debug, Clone)]
pub struct WebhookInput {
    /// The target's URL (`http`); empty for the kinds that have none.
    pub url: String,
    /// The stored body: parsed JSON, a form's decoded fields, or else the
    /// body as text.
    pub payload: Value,
    /// The stored body's `Content-Type`.
    pub content_type: Option<String>,
    pub event_type: Option<String>,
    /// The provider's event id.
    pub event_id: String,
    /// The inbox id: the delivery's idempotency key.
    pub inbox_id: String,
    pub provider: String,
    pub endpoint: String,
    /// When this receiver read the request: the script's `Date.now()`.
    pub received_at_ms: i64,
}

impl WebhookInput {
    /// The `payload` a script sees for a stored body: JSON parsed, a form's
    /// fields decoded (a field holding JSON parsed, `crate::form_body`),
    /// anything else (or JSON that does not parse) as text.
    pub fn payload_of(content_type: Option<&str>, body: &[u8]) -> Value {
        if form_body::is_form(content_type) {
            return Value::Object(form_body::fields(body));
        }
        if form_body::is_json(content_type) {
            if let Ok(json) = serde_json::from_slice(body) {
                return json;
            }
        }
        Value::String(String::from_utf8_lossy(body).into_owned())
    }

    /// The object handed to `handler`, as JSON text.
    pub fn to_json(&self) -> String {
        json!({
            "method": "POST",
            "url": self.url,
            "payload": self.payload,
            "headers": {},
            "eventType": self.event_type,
            "eventId": self.event_id,
            "inboxId": self.inbox_id,
            "provider": self.provider,
            "endpoint": self.endpoint,
            "receivedAt": self.received_at_ms,
        })
        .to_string()
    }
}

/// What a transform decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransformOutcome {
    /// Send this instead of the stored body.
    Send(TransformedRequest),
    /// `cancel: true`: nothing is sent; the delivery is done.
    Cancel,
}

/// The request a transform asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransformedRequest {
    /// `POST` or `PUT` (`http` targets only).
    pub method: hyper::Method,
    /// A URL other than the target's, when the script changed it (`http`
    /// targets only; checked there against the target's scheme).
    pub url: Option<String>,
    /// `payload`: JSON text, or a string payload's bytes as they are.
    pub body: Bytes,
    /// `application/json` for a JSON payload; the stored one for a string
    /// payload (unless the script set `Content-Type` itself).
    pub content_type: Option<String>,
    /// The headers the script set, other than `Content-Type` (`http`
    /// targets only).
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// Headers hookinbox sets itself, which a script may not replace: the
/// idempotency key and the signature must stay what they are.
const RESERVED_HEADERS: &[&str] = &[
    "idempotency-key",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "content-length",
    "transfer-encoding",
    "host",
    "connection",
    "traceparent",
    "tracestate",
];

#[derive(Deserialize)]
struct HandlerResult {
    cancel: Option<Value>,
    method: Option<String>,
    url: Option<String>,
    payload: Option<Value>,
    headers: Option<Map<String, Value>>,
}

impl TransformOutcome {
    /// Reads the handler's answer (`result`, as `JSON.stringify` wrote it)
    /// for an event read as `input`.
    pub fn from_result(
        result: Option<&str>,
        input: &WebhookInput,
    ) -> Result<TransformOutcome, TransformError> {
        let result = result.ok_or(TransformError::BadResult(
            "is not an object (did `handler` return the webhook?)",
        ))?;
        let result: HandlerResult = serde_json::from_str(result)
            .map_err(|_| TransformError::BadResult("is not an object of the webhook's shape"))?;
        if result.cancel == Some(Value::Bool(true)) {
            return Ok(TransformOutcome::Cancel);
        }
        let method = match result.method.as_deref() {
            None | Some("POST") | Some("post") => hyper::Method::POST,
            Some("PUT") | Some("put") => hyper::Method::PUT,
            Some(_) => {
                return Err(TransformError::BadResult(
                    "has a method other than POST or PUT",
                ))
            }
        };
        let url = result.url.filter(|url| *url != input.url);
        let (body, mut content_type) = match result.payload {
            None => return Err(TransformError::BadResult("has no payload")),
            Some(Value::String(text)) => (Bytes::from(text), input.content_type.clone()),
            Some(json) => (
                Bytes::from(json.to_string()),
                Some("application/json".to_owned()),
            ),
        };
        let mut headers = Vec::new();
        for (name, value) in result.headers.unwrap_or_default() {
            let value = match value {
                Value::String(text) => text,
                Value::Number(number) => number.to_string(),
                Value::Bool(flag) => flag.to_string(),
                _ => {
                    return Err(TransformError::BadResult(
                        "has a header value that is not a string",
                    ))
                }
            };
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| TransformError::BadResult("has a header name HTTP does not allow"))?;
            if RESERVED_HEADERS.contains(&name.as_str())
                || name.as_str().starts_with("x-hookinbox-")
            {
                return Err(TransformError::BadResult(
                    "sets a header hookinbox sets itself (idempotency key, webhook-*, x-hookinbox-*, framing)",
                ));
            }
            let value = HeaderValue::from_str(&value)
                .map_err(|_| TransformError::BadResult("has a header value HTTP does not allow"))?;
            if name == hyper::header::CONTENT_TYPE {
                content_type = value.to_str().ok().map(str::to_owned);
                continue;
            }
            headers.push((name, value));
        }
        Ok(TransformOutcome::Send(TransformedRequest {
            method,
            url,
            body,
            content_type,
            headers,
        }))
    }
}
