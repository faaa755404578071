//! An `mqtt` target's `topic`: a template over `{provider}`, `{endpoint}`
//! and `{event_type}`, checked once at start-up so that every topic it can
//! render is one an MQTT broker accepts for a publish.
//!
//! Each placeholder fills exactly one topic level, sanitised as a `nats`
//! subject's token is (`config::nats_subject`): every character other
//! than an ASCII letter, digit, `-` or `_` becomes `_` (so a `/` in an
//! event type cannot add levels, and a `+` or `#` cannot become a
//! wildcard), a missing or empty value is `_`, and a value is cut at
//! [`MAX_LEVEL_CHARS`]. The topic's shape is then the operator's: a
//! subscriber to `webhooks/+/invoice_paid` sees every event the template
//! can produce. The exact values travel in the message's user properties.

use std::fmt;

use serde::{Serialize, Serializer};

/// Longest level a placeholder renders to.
pub const MAX_LEVEL_CHARS: usize = 128;

/// Longest topic MQTT can carry (a two-byte length prefix).
const MAX_TOPIC_BYTES: usize = 65_535;

/// A checked topic template.
#[derive(Clone, PartialEq, Eq)]
pub struct TopicTemplate {
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

/// What one event's topic is rendered from.
#[derive(Debug, Clone, Copy)]
pub struct TopicValues<'a> {
    /// The endpoint's provider (`stripe`).
    pub provider: &'a str,
    /// The endpoint's id.
    pub endpoint: &'a str,
    /// The event's type, when the provider gives one.
    pub event_type: Option<&'a str>,
}

impl TopicTemplate {
    /// Parses and checks `text`; the error says what is wrong, for the
    /// caller to put under the field's name.
    pub fn parse(text: &str) -> Result<TopicTemplate, String> {
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
                        "`{{{other}}}` is not a placeholder: a topic may use `{{provider}}`, \
                         `{{endpoint}}` and `{{event_type}}`"
                    ))
                }
            });
            rest = &rest[close + 1..];
        }
        let template = TopicTemplate {
            text: text.to_owned(),
            parts,
        };
        let placeholders = template
            .parts
            .iter()
            .filter(|part| !matches!(part, Part::Literal(_)))
            .count();
        let literal_bytes: usize = template
            .parts
            .iter()
            .map(|part| match part {
                Part::Literal(text) => text.len(),
                _ => 0,
            })
            .sum();
        if literal_bytes + placeholders * MAX_LEVEL_CHARS > MAX_TOPIC_BYTES {
            return Err(format!(
                "`{text}` is longer than the {MAX_TOPIC_BYTES} bytes an MQTT topic may have"
            ));
        }
        // Placeholders render to non-empty levels of safe characters, so a
        // sample rendering is valid exactly when every rendering is.
        let sample = template.render(TopicValues {
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
    pub fn render(&self, values: TopicValues<'_>) -> String {
        let mut topic = String::with_capacity(self.text.len() + 48);
        for part in &self.parts {
            match part {
                Part::Literal(text) => topic.push_str(text),
                Part::Provider => push_level(&mut topic, values.provider),
                Part::Endpoint => push_level(&mut topic, values.endpoint),
                Part::EventType => push_level(&mut topic, values.event_type.unwrap_or_default()),
            }
        }
        topic
    }

    /// As written in the configuration.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for TopicTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

/// As written (`config check`).
impl Serialize for TopicTemplate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

/// Appends `value` as (part of) one topic level (see the module's
/// documentation).
fn push_level(topic: &mut String, value: &str) {
    if value.is_empty() {
        topic.push('_');
        return;
    }
    topic.extend(value.chars().take(MAX_LEVEL_CHARS).map(|c| {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        }
    }));
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

    fn values<'a>(
        provider: &'a str,
        endpoint: &'a str,
        event_type: Option<&'a str>,
    ) -> TopicValues<'a> {
        TopicValues {
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
        let long = "x".repeat(MAX_LEVEL_CHARS + 50);
        assert_eq!(
            template.render(values("p", "e", Some(&long))).len(),
            MAX_LEVEL_CHARS
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
        let long = "x".repeat(MAX_TOPIC_BYTES - MAX_LEVEL_CHARS + 1);
        assert!(refusal(&format!("{long}{{endpoint}}")).contains("longer than"));
        assert!(TopicTemplate::parse(&format!("{}{{endpoint}}", &long[1..])).is_ok());
    }
}
