//! A broker target's name template: a `rabbitmq` target's `routing_key`
//! and a `redis_stream` target's `stream`, over `{provider}`, `{endpoint}`
//! and `{event_type}`.
//!
//! Each placeholder is filled as a `nats` subject token is
//! (`nats_subject`): every character other than an ASCII letter, digit,
//! `-` or `_` becomes `_`, a missing or empty value is `_`, and a value is
//! cut at 128 characters. So the shape of a routing key (its `.`-separated
//! words, which topic-exchange bindings match) or of a stream's key space
//! is the operator's, and a provider's event type — sometimes from an
//! unsigned header — cannot add words, wildcards or another stream's
//! prefix to it. The exact values travel in the message's headers.

use std::fmt;

use serde::{Serialize, Serializer};

use super::nats_subject::push_token;

/// A checked name template.
#[derive(Clone, PartialEq, Eq)]
pub struct NameTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Provider,
    Endpoint,
    EventType,
}

/// What one event fills a template with.
#[derive(Debug, Clone, Copy)]
pub struct NameValues<'a> {
    /// The endpoint's provider (`stripe`).
    pub provider: &'a str,
    /// The endpoint's id.
    pub endpoint: &'a str,
    /// The event's type, when the provider gives one.
    pub event_type: Option<&'a str>,
}

impl NameTemplate {
    /// Parses `text`; the error says what is wrong, for the caller to put
    /// under the field's name. An empty template is refused: every kind
    /// that uses one needs a name.
    pub fn parse(text: &str) -> Result<NameTemplate, String> {
        if text.is_empty() {
            return Err("is empty".into());
        }
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
            parts.push(match &rest[1..close] {
                "provider" => Part::Provider,
                "endpoint" => Part::Endpoint,
                "event_type" => Part::EventType,
                other => {
                    return Err(format!(
                        "`{{{other}}}` is not a placeholder: use `{{provider}}`, `{{endpoint}}` \
                         and `{{event_type}}`"
                    ))
                }
            });
            rest = &rest[close + 1..];
        }
        Ok(NameTemplate {
            text: text.to_owned(),
            parts,
        })
    }

    /// The longest name this template can render, in bytes.
    pub fn max_len(&self) -> usize {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Literal(text) => text.len(),
                _ => super::nats_subject::MAX_TOKEN_CHARS,
            })
            .sum()
    }

    /// The name for one event.
    pub fn render(&self, values: NameValues<'_>) -> String {
        let mut name = String::with_capacity(self.text.len() + 32);
        for part in &self.parts {
            match part {
                Part::Literal(text) => name.push_str(text),
                Part::Provider => push_token(&mut name, values.provider),
                Part::Endpoint => push_token(&mut name, values.endpoint),
                Part::EventType => push_token(&mut name, values.event_type.unwrap_or_default()),
            }
        }
        name
    }

    /// As written in the configuration.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for NameTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

/// As written (`config check`).
impl Serialize for NameTemplate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRIPE: NameValues<'static> = NameValues {
        provider: "stripe",
        endpoint: "billing",
        event_type: Some("invoice.paid"),
    };

    #[test]
    fn placeholders_fill_one_sanitised_word_each() {
        let template = NameTemplate::parse("{provider}.{endpoint}.{event_type}").unwrap();
        assert_eq!(template.render(STRIPE), "stripe.billing.invoice_paid");
        let hostile = NameValues {
            event_type: Some("a.#.*"),
            ..STRIPE
        };
        assert_eq!(template.render(hostile), "stripe.billing.a____");
        let none = NameValues {
            event_type: None,
            ..STRIPE
        };
        assert_eq!(template.render(none), "stripe.billing._");
        let long = "x".repeat(500);
        let long = NameValues {
            event_type: Some(&long),
            ..STRIPE
        };
        assert_eq!(template.render(long).len(), "stripe.billing.".len() + 128);
        assert_eq!(template.max_len(), 2 + 3 * 128);
    }

    #[test]
    fn literals_are_kept_and_mistakes_refused() {
        let template = NameTemplate::parse("webhooks:{endpoint}").unwrap();
        assert_eq!(template.render(STRIPE), "webhooks:billing");
        assert_eq!(
            NameTemplate::parse("fixed").unwrap().render(STRIPE),
            "fixed"
        );
        for (text, problem) in [
            ("", "empty"),
            ("a.{type}", "not a placeholder"),
            ("a.{endpoint", "not closed"),
            ("a}", "without its"),
        ] {
            let error = NameTemplate::parse(text).unwrap_err();
            assert!(error.contains(problem), "{text}: {error}");
        }
    }
}
