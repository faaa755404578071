//! The template every broker target names its destination with (a `nats`
//! `subject`, an `mqtt` `topic`, a `rabbitmq` `routing_key`, a
//! `redis_stream` `stream`): literal text and the placeholders
//! `{provider}`, `{endpoint}` and `{event_type}`, parsed once at start-up.
//!
//! A kind says which placeholders it accepts and checks what the template
//! can render against its broker's rules (`SubjectTemplate`,
//! `TopicTemplate`, `NameTemplate`); it supplies, when rendering, the rule
//! that appends one value. Every kind uses [`push_safe_word`] today.

use std::fmt;

use serde::{Serialize, Serializer};

/// Longest piece a placeholder renders to, in characters (and bytes: the
/// rendering is ASCII). A NATS server refuses a publish whose protocol
/// line passes its `max_control_line` (4 KiB by default).
pub const MAX_VALUE_CHARS: usize = 128;

/// A placeholder a template may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholder {
    /// `{provider}`
    Provider,
    /// `{endpoint}`
    Endpoint,
    /// `{event_type}`
    EventType,
}

/// What one event fills a template with.
#[derive(Debug, Clone, Copy)]
pub struct TemplateValues<'a> {
    /// The endpoint's provider (`stripe`).
    pub provider: &'a str,
    /// The endpoint's id.
    pub endpoint: &'a str,
    /// The event's type, when the provider gives one.
    pub event_type: Option<&'a str>,
}

/// A parsed template, not yet checked against any broker's rules.
#[derive(Clone, PartialEq, Eq)]
pub struct PlaceholderTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Value(Placeholder),
}

impl PlaceholderTemplate {
    /// Parses `text`, accepting only the `accepted` placeholders; an
    /// unknown one is refused with `placeholder_hint` (what the field may
    /// use) after the colon. The error is for the caller to put under the
    /// field's name.
    pub fn parse(
        text: &str,
        accepted: &[Placeholder],
        placeholder_hint: &str,
    ) -> Result<PlaceholderTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let literal_end = rest.find(['{', '}']).unwrap_or(rest.len());
            if literal_end > 0 {
                parts.push(Part::Literal(rest[..literal_end].to_owned()));
            }
            rest = &rest[literal_end..];
            if rest.starts_with('}') {
                return Err("has a `}` without its `{`".into());
            }
            if rest.is_empty() {
                break;
            }
            let close = rest
                .find('}')
                .ok_or("has a `{` that is not closed by `}`")?;
            let name = &rest[1..close];
            let placeholder = match name {
                "provider" => Some(Placeholder::Provider),
                "endpoint" => Some(Placeholder::Endpoint),
                "event_type" => Some(Placeholder::EventType),
                _ => None,
            }
            .filter(|placeholder| accepted.contains(placeholder))
            .ok_or_else(|| format!("`{{{name}}}` is not a placeholder: {placeholder_hint}"))?;
            parts.push(Part::Value(placeholder));
            rest = &rest[close + 1..];
        }
        Ok(PlaceholderTemplate {
            text: text.to_owned(),
            parts,
        })
    }

    /// The longest text this template can render, in bytes.
    pub fn max_len(&self) -> usize {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Literal(text) => text.len(),
                Part::Value(_) => MAX_VALUE_CHARS,
            })
            .sum()
    }

    /// The text for one event, each placeholder's value appended by
    /// `push_value` (the kind's rule, e.g. [`push_safe_word`]).
    pub fn render(&self, values: TemplateValues<'_>, push_value: fn(&mut String, &str)) -> String {
        let mut rendered = String::with_capacity(self.text.len() + 48);
        for part in &self.parts {
            match part {
                Part::Literal(text) => rendered.push_str(text),
                Part::Value(Placeholder::Provider) => push_value(&mut rendered, values.provider),
                Part::Value(Placeholder::Endpoint) => push_value(&mut rendered, values.endpoint),
                Part::Value(Placeholder::EventType) => {
                    push_value(&mut rendered, values.event_type.unwrap_or_default())
                }
            }
        }
        rendered
    }

    /// As written in the configuration.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for PlaceholderTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

/// As written (`config check`).
impl Serialize for PlaceholderTemplate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

/// Appends `value` as exactly one word that is safe as a NATS subject
/// token, an MQTT topic level and a word of an AMQP routing key: every
/// character other than an ASCII letter, digit, `-` or `_` becomes `_`
/// (so a value cannot add `.`-tokens or `/`-levels, nor become a
/// wildcard), a missing or empty value is `_`, and a value is cut at
/// [`MAX_VALUE_CHARS`]. The template's shape is then the operator's, never
/// the provider's.
pub fn push_safe_word(rendered: &mut String, value: &str) {
    if value.is_empty() {
        rendered.push('_');
        return;
    }
    rendered.extend(value.chars().take(MAX_VALUE_CHARS).map(|c| {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        }
    }));
}
