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
//! `placeholder_template::MAX_VALUE_CHARS` (`push_safe_word`). The exact
//! values travel in the message's headers.

use std::fmt;

use serde::Serialize;

use super::placeholder_template::{
    push_safe_word, Placeholder, PlaceholderTemplate, TemplateValues,
};

/// A checked subject template.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct SubjectTemplate(PlaceholderTemplate);

impl SubjectTemplate {
    /// Parses and checks `text`; the error says what is wrong, for the
    /// caller to put under the field's name.
    pub fn parse(text: &str) -> Result<SubjectTemplate, String> {
        let template = SubjectTemplate(PlaceholderTemplate::parse(
            text,
            &[Placeholder::Endpoint, Placeholder::EventType],
            "a subject may use `{endpoint}` and `{event_type}`",
        )?);
        // Placeholders render to non-empty tokens without dots or wildcards,
        // so a sample rendering is valid exactly when every rendering is.
        check_publish_subject(&template.render("e", Some("t"))).map_err(|problem| {
            format!("`{text}` is not a subject events can be published to: {problem}")
        })?;
        Ok(template)
    }

    /// The subject one event is published to.
    pub fn render(&self, endpoint: &str, event_type: Option<&str>) -> String {
        let values = TemplateValues {
            provider: "",
            endpoint,
            event_type,
        };
        self.0.render(values, push_safe_word)
    }

    /// As written in the configuration.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Debug for SubjectTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
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
    use crate::config::placeholder_template::MAX_VALUE_CHARS;

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
        let long = "x".repeat(MAX_VALUE_CHARS + 50);
        assert_eq!(template.render("e", Some(&long)).len(), MAX_VALUE_CHARS);
    }

    #[test]
    fn only_the_two_placeholders_are_accepted() {
        assert!(refusal("hooks.{event}").contains("`{event}` is not a placeholder"));
        assert!(refusal("hooks.{}").contains("`{}` is not a placeholder"));
        assert!(refusal("hooks.{provider}")
            .contains("`{provider}` is not a placeholder: a subject may use `{endpoint}`"));
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
