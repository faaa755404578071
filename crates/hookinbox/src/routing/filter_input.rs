//! What a `filter` sees of an event: `event`, `headers` and `body`
//! (docs/delivery.md, "Routing"). Built once per event and shared by every
//! target's filter.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, Value};

use super::body_paths::BodyPaths;
use crate::form_body;

/// The accepted event as routing reads it.
#[derive(Debug, Clone, Copy)]
pub struct RoutedEvent<'a> {
    pub provider: &'a str,
    pub endpoint: &'a str,
    /// The provider's event id.
    pub id: &'a str,
    pub event_type: Option<&'a str>,
    /// When this receiver read the request, unix milliseconds.
    pub received_at_ms: i64,
    pub matched_secret_version: &'a str,
    /// The stored (allowlisted) request headers.
    pub headers: &'a [(String, String)],
    pub content_type: Option<&'a str>,
    /// The verified body.
    pub body: &'a [u8],
}

/// The filter's variables for one event: `event`, `headers`, and `body`
/// turned into CEL values only as far as the filters read it
/// ([`BodyPaths`]).
#[derive(Debug, Clone)]
pub struct FilterInput {
    event: Value,
    headers: Value,
    /// Absent unless the body is JSON or a form.
    body: Option<Value>,
}

impl FilterInput {
    /// The variables of `event`, with what `reads` names of its body.
    pub fn new(event: &RoutedEvent<'_>, reads: &BodyPaths) -> FilterInput {
        let mut fields: HashMap<Key, Value> = HashMap::new();
        let mut put = |name: &str, value: Value| {
            fields.insert(Key::String(Arc::new(name.to_owned())), value);
        };
        put("provider", text(event.provider));
        put("endpoint", text(event.endpoint));
        put("id", text(event.id));
        put("type", event.event_type.map_or(Value::Null, text));
        put("received_at_ms", Value::Int(event.received_at_ms));
        put("matched_secret_version", text(event.matched_secret_version));
        let headers: HashMap<Key, Value> = event
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    Key::String(Arc::new(name.to_ascii_lowercase())),
                    text(value),
                )
            })
            .collect();
        FilterInput {
            event: map(fields),
            headers: map(headers),
            body: body_json(event.content_type, event.body).map(|body| reads.convert(&body)),
        }
    }

    /// A CEL context holding the variables.
    pub fn context(&self) -> Context<'static, 'static> {
        let mut context = Context::default();
        context.add_variable_from_value("event", self.event.clone());
        context.add_variable_from_value("headers", self.headers.clone());
        if let Some(body) = &self.body {
            context.add_variable_from_value("body", body.clone());
        }
        context
    }
}

fn text(value: &str) -> Value {
    Value::String(Arc::new(value.to_owned()))
}

fn map(fields: HashMap<Key, Value>) -> Value {
    Value::Map(Map {
        map: Arc::new(fields),
    })
}

/// The body as JSON, or as form fields (a field holding a JSON object or
/// array, GitHub's and Slack's `payload=`, parsed: `crate::form_body`);
/// `None` for any other content type or a body that does not parse.
fn body_json(content_type: Option<&str>, body: &[u8]) -> Option<serde_json::Value> {
    if form_body::is_form(content_type) {
        return Some(serde_json::Value::Object(form_body::fields(body)));
    }
    if form_body::is_json(content_type) {
        return serde_json::from_slice::<serde_json::Value>(body).ok();
    }
    None
}
