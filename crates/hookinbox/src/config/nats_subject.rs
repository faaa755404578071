//! A `nats` target's `subject`: a template over `{endpoint}` and
//! `{event_type}`, checked once at start-up so that every subject it can
//! render is one a NATS server accepts for a publish.
//!
//! Each placeholder fills exactly one subject token, whatever its value.
//! The subject's shape (how many tokens, where) is then the operator's, not
//! the provider's: a consumer filtering on `hooks.*.invoice_paid` or a
//! stream capturing `hooks.>` sees every event the template can produce,
//! and a provider's event type (sometimes from an unsigned header) cannot
//! add tokens, empty tokens or wildcards to it. So a value is sanitised:
//! every character other than an ASCII letter, digit, `-` or `_` becomes
//! `_` (Stripe's `invoice.paid` → `invoice_paid`, `a b` → `a_b`), a
//! missing or empty value is `_`, and a value is cut at
//! [`MAX_TOKEN_CHARS`]. The exact values travel in the message's headers.

use std::fmt;

use serde::{Serialize, Serializer};

/// Longest token a placeholder renders to: a NATS server refuses a publish
/// whose protocol line passes its `max_control_line` (4 KiB by default).
pub const MAX_TOKEN_CHARS: usize = 128;

/// A checked subject template.
#[derive(Clone, PartialEq, Eq)]
pub struct SubjectTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Endpoint,
    EventType,
}

impl SubjectTemplate {
    /// Parses and checks `text`; the error says what is wrong, for the
    /// caller to put under the field's name.
    pub fn parse(text: &str) -> Result<SubjectTemplate, String> {
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
                "endpoint" => Part::Endpoint,
                "event_type" => Part::EventType,
                other => {
                    return Err(format!(
                        "`{{{other}}}` is not a placeholder: a subject may use `{{endpoint}}` \
                         and `{{event_type}}`"
                    ))
                }
            });
            rest = &rest[close + 1..];
        }
        let template = SubjectTemplate {
            text: text.to_owned(),
            parts,
        };
        // Placeholders render to non-empty tokens without dots or wildcards,
        // so a sample rendering is valid exactly when every rendering is.
        check_publish_subject(&template.render("e", Some("t"))).map_err(|problem| {
            format!("`{text}` is not a subject events can be published to: {problem}")
        })?;
        Ok(template)
    }

    /// The subject one event is published to.
    pub fn render(&self, endpoint: &str, event_type: Option<&str>) -> String {
        let mut subject = String::with_capacity(self.text.len() + 32);
        for part in &self.parts {
            match part {
                Part::Literal(text) => subject.push_str(text),
                Part::Endpoint => push_token(&mut subject, endpoint),
                Part::EventType => push_token(&mut subject, event_type.unwrap_or_default()),
            }
        }
        subject
    }

    /// As written in the configuration.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for SubjectTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

/// As written (`config check`).
impl Serialize for SubjectTemplate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

/// Appends `value` as one subject token (see the module's documentation).
pub(super) fn push_token(subject: &mut String, value: &str) {
    if value.is_empty() {
        subject.push('_');
        return;
    }
    subject.extend(value.chars().take(MAX_TOKEN_CHARS).map(|c| {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        }
    }));
}

/// What a NATS server requires of a subject published to: tokens separated
/// by `.`, none empty, no whitespace, no wildcard (`*`, `>` are for
/// subscribers). Printable ASCII only, to keep subjects portable across
/// clients and tools.
fn check_publish_subject(subject: &str) -> Result<(), &'static str> {
    if subject.is_empty() {
        return Err("it is empty");
    }
    if subject.split('.').any(str::is_empty) {
        return Err("it has an empty token (a `.` at either end, or two together)");
    }
    for c in subject.chars() {
        match c {
            '*' | '>' => return Err("`*` and `>` are wildcards, for subscribers only"),
            c if c.is_whitespace() => return Err("it contains whitespace"),
            c if !c.is_ascii_graphic() => return Err("only printable ASCII is allowed"),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(text: &str) -> String {
        SubjectTemplate::parse(text).expect_err(text)
    }

    #[test]
    fn placeholders_each_fill_one_token() {
        let template = SubjectTemplate::parse("hooks.{endpoint}.{event_type}").unwrap();
        assert_eq!(
            template.render("stripe", Some("invoice.paid")),
            "hooks.stripe.invoice_paid"
        );
        assert_eq!(
            template.render("my.endpoint", Some("push event")),
            "hooks.my_endpoint.push_event"
        );
        assert_eq!(template.render("lab", None), "hooks.lab._");
        assert_eq!(template.render("lab", Some("")), "hooks.lab._");
        assert_eq!(
            template.render("lab", Some("a.*.>\tb\r\nc")),
            "hooks.lab.a_____b__c"
        );
        assert_eq!(
            template.render("lab", Some("zahlung.érfolg")),
            "hooks.lab.zahlung__rfolg"
        );
        // Inside a token, around literal text.
        let mixed = SubjectTemplate::parse("in-{endpoint}-raw").unwrap();
        assert_eq!(mixed.render("gh", Some("push")), "in-gh-raw");
        // A fixed subject is a template too.
        assert_eq!(
            SubjectTemplate::parse("events")
                .unwrap()
                .render("x", Some("y")),
            "events"
        );
    }

    #[test]
    fn a_long_value_is_cut() {
        let template = SubjectTemplate::parse("{event_type}").unwrap();
        let long = "x".repeat(MAX_TOKEN_CHARS + 50);
        assert_eq!(template.render("e", Some(&long)).len(), MAX_TOKEN_CHARS);
    }

    #[test]
    fn only_the_two_placeholders_are_accepted() {
        assert!(refusal("hooks.{event}").contains("`{event}` is not a placeholder"));
        assert!(refusal("hooks.{}").contains("`{}` is not a placeholder"));
        assert!(refusal("hooks.{endpoint").contains("not closed"));
        assert!(refusal("hooks.endpoint}").contains("without its `{`"));
    }

    #[test]
    fn subjects_a_server_would_refuse_are_refused() {
        for (text, problem) in [
            ("", "it is empty"),
            ("hooks.", "empty token"),
            (".hooks", "empty token"),
            ("hooks..{endpoint}", "empty token"),
            ("hooks.*", "wildcards"),
            ("hooks.>", "wildcards"),
            ("hooks.{endpoint}.>", "wildcards"),
            ("hooks a", "whitespace"),
            ("hooks.\t{endpoint}", "whitespace"),
            ("hooks.é", "printable ASCII"),
        ] {
            let message = refusal(text);
            assert!(message.contains(problem), "{text:?}: {message}");
        }
    }
}
