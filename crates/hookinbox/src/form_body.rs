//! `application/x-www-form-urlencoded` bodies as JSON, the one reading that
//! a target's `filter` (`body`), its `transform` (`payload`) and its
//! `body = "json"` share (docs/delivery.md, "Form bodies"). GitHub and
//! Slack send their JSON event as one form field, `payload=`: a field that
//! holds a JSON object or array is parsed, so `body.payload.ref` reads it.

use serde_json::{Map, Value};

/// The media type of a `Content-Type` value, lowercase, without parameters.
pub fn media_type(content_type: Option<&str>) -> Option<String> {
    content_type
        .and_then(|value| value.split(';').next())
        .map(|value| value.trim().to_ascii_lowercase())
}

/// Whether `content_type` names a form-encoded body.
pub fn is_form(content_type: Option<&str>) -> bool {
    media_type(content_type).as_deref() == Some("application/x-www-form-urlencoded")
}

/// Whether `content_type` names a JSON body (`application/json` or `…+json`).
pub fn is_json(content_type: Option<&str>) -> bool {
    media_type(content_type)
        .is_some_and(|media| media == "application/json" || media.ends_with("+json"))
}

/// The decoded fields of a form body, each a string, or the parsed JSON for
/// a field holding a JSON object or array. A name given twice keeps its
/// last value.
pub fn fields(body: &[u8]) -> Map<String, Value> {
    form_urlencoded::parse(body)
        .map(|(name, value)| (name.into_owned(), field_value(&value)))
        .collect()
}

/// What `body = "json"` delivers for a form body: the JSON of its only
/// field when it has exactly one and that field holds JSON (GitHub's and
/// Slack's `payload=`: the same document the provider sends as
/// `application/json`), else the object of all its fields.
pub fn as_json(body: &[u8]) -> Value {
    let mut fields = fields(body);
    if fields.len() == 1 {
        if let Some((_, value)) = fields.iter().next() {
            if value.is_object() || value.is_array() {
                return value.clone();
            }
        }
    }
    Value::Object(std::mem::take(&mut fields))
}

fn field_value(value: &str) -> Value {
    let trimmed = value.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        if let Ok(json) = serde_json::from_str::<Value>(value) {
            return json;
        }
    }
    Value::String(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_holding_json_is_parsed_and_others_stay_text() {
        let fields = fields(b"payload=%7B%22ref%22%3A%22refs%2Fheads%2Fmain%22%7D&token=a%2Bb&list=%5B1%2C2%5D&broken=%7Bnot");
        assert_eq!(fields["payload"]["ref"], "refs/heads/main");
        assert_eq!(fields["token"], "a+b");
        assert_eq!(fields["list"], serde_json::json!([1, 2]));
        assert_eq!(fields["broken"], "{not");
    }

    #[test]
    fn a_lone_json_field_is_delivered_as_that_json_and_several_fields_as_an_object() {
        assert_eq!(
            as_json(b"payload=%7B%22zen%22%3A%22hi%22%7D"),
            serde_json::json!({"zen": "hi"})
        );
        assert_eq!(
            as_json(b"a=1&b=%7B%22c%22%3A2%7D"),
            serde_json::json!({"a": "1", "b": {"c": 2}})
        );
        assert_eq!(as_json(b"a=1"), serde_json::json!({"a": "1"}));
        assert_eq!(as_json(b""), serde_json::json!({}));
    }

    #[test]
    fn media_types_are_read_without_parameters_or_case() {
        assert!(is_form(Some(
            "Application/X-WWW-Form-Urlencoded; charset=utf-8"
        )));
        assert!(!is_form(Some("application/json")));
        assert!(is_json(Some("application/vnd.api+json")));
        assert!(!is_json(None));
    }
}
