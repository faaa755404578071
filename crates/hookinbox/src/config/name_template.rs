//! A broker target's name template: a `rabbitmq` target's `routing_key`
//! and a `redis_stream` target's `stream`, over `{provider}`, `{endpoint}`
//! and `{event_type}`.
//!
//! Each placeholder is filled as a `nats` subject token is
//! (`placeholder_template::push_safe_word`): every character other than
//! an ASCII letter, digit, `-` or `_` becomes `_`, a missing or empty value is `_`, and a value is
//! cut at 128 characters. So the shape of a routing key (its `.`-separated
//! words, which topic-exchange bindings match) or of a stream's key space
//! is the operator's, and a provider's event type — sometimes from an
//! unsigned header — cannot add words, wildcards or another stream's
//! prefix to it. The exact values travel in the message's headers.

use std::fmt;

use serde::Serialize;

use super::placeholder_template::{
    push_safe_word, Placeholder, PlaceholderTemplate, TemplateValues,
};

/// A checked name template.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct NameTemplate(PlaceholderTemplate);

impl NameTemplate {
    /// Parses `text`; the error says what is wrong, for the caller to put
    /// under the field's name. An empty template is refused: every kind
    /// that uses one needs a name.
    pub fn parse(text: &str) -> Result<NameTemplate, String> {
        if text.is_empty() {
            return Err("is empty".into());
        }
        PlaceholderTemplate::parse(
            text,
            &[
                Placeholder::Provider,
                Placeholder::Endpoint,
                Placeholder::EventType,
            ],
            "use `{provider}`, `{endpoint}` and `{event_type}`",
        )
        .map(NameTemplate)
    }

    /// The longest name this template can render, in bytes.
    pub fn max_len(&self) -> usize {
        self.0.max_len()
    }

    /// The name for one event.
    pub fn render(&self, values: TemplateValues<'_>) -> String {
        self.0.render(values, push_safe_word)
    }

    /// As written in the configuration.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Debug for NameTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRIPE: TemplateValues<'static> = TemplateValues {
        provider: "stripe",
        endpoint: "billing",
        event_type: Some("invoice.paid"),
    };

    #[test]
    fn placeholders_fill_one_sanitised_word_each() {
        let template = NameTemplate::parse("{provider}.{endpoint}.{event_type}").unwrap();
        assert_eq!(template.render(STRIPE), "stripe.billing.invoice_paid");
        let hostile = TemplateValues {
            event_type: Some("a.#.*"),
            ..STRIPE
        };
        assert_eq!(template.render(hostile), "stripe.billing.a____");
        let none = TemplateValues {
            event_type: None,
            ..STRIPE
        };
        assert_eq!(template.render(none), "stripe.billing._");
        let long = "x".repeat(500);
        let long = TemplateValues {
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
