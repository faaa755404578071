//! What a `filter` sees of an event: `event`, `headers` and `body`
//! (docs/delivery.md, "Routing"). Built once per event and shared by every
//! target's filter.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, Value};

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

/// The filter's variables for one event.
#[derive(Debug, Clone)]
pub struct FilterInput {
    event: Value,
    headers: Value,
    /// Absent unless the body is JSON or a form.
    body: Option<Value>,
}

impl FilterInput {
    pub fn new(event: &RoutedEvent<'_>) -> FilterInput {
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
            body: body_value(event.content_type, event.body),
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
fn body_value(content_type: Option<&str>, body: &[u8]) -> Option<Value> {
    if form_body::is_form(content_type) {
        return Some(from_json(&serde_json::Value::Object(form_body::fields(
            body,
        ))));
    }
    if form_body::is_json(content_type) {
        return serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .map(|json| from_json(&json));
    }
    None
}

/// JSON as CEL values: whole numbers as `int` (so `amount > 1000` compares
/// without a cast), others as `double`.
fn from_json(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => text(s),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(from_json).collect()))
        }
        serde_json::Value::Object(fields) => map(fields
            .iter()
            .map(|(name, value)| (Key::String(Arc::new(name.clone())), from_json(value)))
            .collect()),
    }
}
