//! An `mqtt` target's `topic`: a template over `{provider}`, `{endpoint}`
//! and `{event_type}`, checked once at start-up so that every topic it can
//! render is one an MQTT broker accepts for a publish.
//!
//! Each placeholder fills exactly one topic level, sanitised by
//! `placeholder_template::push_safe_word`: every character other
//! than an ASCII letter, digit, `-` or `_` becomes `_` (so a `/` in an
//! event type cannot add levels, and a `+` or `#` cannot become a
//! wildcard), a missing or empty value is `_`, and a value is cut at
//! `MAX_VALUE_CHARS`. The topic's shape is then the operator's: a
//! subscriber to `webhooks/+/invoice_paid` sees every event the template
//! can produce. The exact values travel in the message's user properties.

use std::fmt;

use serde::Serialize;

use super::placeholder_template::{
    push_safe_word, Placeholder, PlaceholderTemplate, TemplateValues,
};

/// Longest topic MQTT can carry (a two-byte length prefix).
const MAX_TOPIC_BYTES: usize = 65_535;

/// A checked topic template.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct TopicTemplate(PlaceholderTemplate);

impl TopicTemplate {
    /// Parses and checks `text`; the error says what is wrong, for the
    /// caller to put under the field's name.
    pub fn parse(text: &str) -> Result<TopicTemplate, String> {
        let template = TopicTemplate(PlaceholderTemplate::parse(
            text,
            &[
                Placeholder::Provider,
                Placeholder::Endpoint,
                Placeholder::EventType,
            ],
            "a topic may use `{provider}`, `{endpoint}` and `{event_type}`",
        )?);
        if template.0.max_len() > MAX_TOPIC_BYTES {
            return Err(format!(
                "`{text}` is longer than the {MAX_TOPIC_BYTES} bytes an MQTT topic may have"
            ));
        }
        // Placeholders render to non-empty levels of safe characters, so a
        // sample rendering is valid exactly when every rendering is.
        let sample = template.render(TemplateValues {
            provider: "p",
            endpoint: "e",
            event_type: Some("t"),
        });
        check_publish_topic(&sample).map_err(|problem| {
            format!("`{text}` is not a topic events can be published to: {problem}")
        })?;
        Ok(template)
    }

    /// The topic one event is published to.
    pub fn render(&self, values: TemplateValues<'_>) -> String {
        self.0.render(values, push_safe_word)
    }

    /// As written in the configuration.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Debug for TopicTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// What a broker requires of a topic published to (MQTT 3.1.1 §4.7, 5.0
/// §4.7): not empty, no wildcard (`+`, `#` are for subscribers), no NUL.
/// Control characters are refused too (the specification says a topic
/// should not hold them), and so is a leading `$`, which brokers keep for
/// their own topics (`$SYS/…`).
fn check_publish_topic(topic: &str) -> Result<(), &'static str> {
    if topic.is_empty() {
        return Err("it is empty");
    }
    if topic.starts_with('$') {
        return Err("topics starting with `$` are the broker's own");
    }
    for c in topic.chars() {
        match c {
            '+' | '#' => return Err("`+` and `#` are wildcards, for subscribers only"),
            c if c.is_control() => return Err("it contains a control character"),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::placeholder_template::MAX_VALUE_CHARS;

    fn values<'a>(
        provider: &'a str,
        endpoint: &'a str,
        event_type: Option<&'a str>,
    ) -> TemplateValues<'a> {
        TemplateValues {
            provider,
            endpoint,
            event_type,
        }
    }

    fn refusal(text: &str) -> String {
        TopicTemplate::parse(text).expect_err(text)
    }

    #[test]
    fn placeholders_each_fill_one_level() {
        let template = TopicTemplate::parse("webhooks/{provider}/{endpoint}/{event_type}").unwrap();
        assert_eq!(
            template.render(values("stripe", "billing", Some("invoice.paid"))),
            "webhooks/stripe/billing/invoice_paid"
        );
        assert_eq!(
            template.render(values("lab", "a/b", Some("x/+/#"))),
            "webhooks/lab/a_b/x____"
        );
        assert_eq!(
            template.render(values("lab", "e", None)),
            "webhooks/lab/e/_"
        );
        assert_eq!(
            template.render(values("lab", "e", Some(""))),
            "webhooks/lab/e/_"
        );
        assert_eq!(
            template.render(values("lab", "e", Some("a\0b\r\nc é"))),
            "webhooks/lab/e/a_b__c__"
        );
        // Literal text may be anything a broker takes, UTF-8 included.
        let mixed = TopicTemplate::parse("zähler/{endpoint}-raw").unwrap();
        assert_eq!(mixed.render(values("p", "gh", None)), "zähler/gh-raw");
        assert_eq!(
            TopicTemplate::parse("/events//")
                .unwrap()
                .render(values("p", "e", None)),
            "/events//"
        );
    }

    #[test]
    fn a_long_value_is_cut() {
        let template = TopicTemplate::parse("{event_type}").unwrap();
        let long = "x".repeat(MAX_VALUE_CHARS + 50);
        assert_eq!(
            template.render(values("p", "e", Some(&long))).len(),
            MAX_VALUE_CHARS
        );
    }

    #[test]
    fn only_the_three_placeholders_are_accepted() {
        assert!(refusal("hooks/{event}").contains("`{event}` is not a placeholder"));
        assert!(refusal("hooks/{}").contains("`{}` is not a placeholder"));
        assert!(refusal("hooks/{endpoint").contains("not closed"));
        assert!(refusal("hooks/endpoint}").contains("without its `{`"));
    }

    #[test]
    fn topics_a_broker_would_refuse_are_refused() {
        for (text, problem) in [
            ("", "it is empty"),
            ("hooks/+", "wildcards"),
            ("hooks/#", "wildcards"),
            ("hooks/{endpoint}/#", "wildcards"),
            ("hooks/a+b", "wildcards"),
            ("hooks\0", "control character"),
            ("hooks/\t{endpoint}", "control character"),
            ("$SYS/{endpoint}", "the broker's own"),
        ] {
            let message = refusal(text);
            assert!(message.contains(problem), "{text:?}: {message}");
        }
        let long = "x".repeat(MAX_TOPIC_BYTES - MAX_VALUE_CHARS + 1);
        assert!(refusal(&format!("{long}{{endpoint}}")).contains("longer than"));
        assert!(TopicTemplate::parse(&format!("{}{{endpoint}}", &long[1..])).is_ok());
    }
}
