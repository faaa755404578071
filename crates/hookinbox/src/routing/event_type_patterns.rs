//! A target's `event_types`: glob patterns matched against the event type.
//!
//! Event types are dotted (Stripe's `invoice.paid`) or slashed (Shopify's
//! `orders/create`), so both `.` and `/` separate segments: `*` matches
//! within one segment (`invoice.*` takes `invoice.paid`, not
//! `invoice.payment.failed`), `**` any number of whole segments
//! (`invoice.**`), `?` one character, `[…]` a class, `{a,b}` either.
//! Matching is case-sensitive. An event without a type matches no pattern.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The compiled patterns, with the text they were written as.
#[derive(Debug, Clone)]
pub struct EventTypePatterns {
    sources: Vec<String>,
    set: GlobSet,
}

impl EventTypePatterns {
    /// Compiles `patterns`; the error names the pattern and why it is not one.
    pub fn compile(patterns: &[String]) -> Result<EventTypePatterns, String> {
        if patterns.is_empty() {
            return Err("lists no pattern: leave it out to take every event type".into());
        }
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            let glob = GlobBuilder::new(&as_path(pattern))
                .literal_separator(true)
                .build()
                .map_err(|error| format!("`{pattern}` is not a glob pattern: {}", error.kind()))?;
            builder.add(glob);
        }
        let set = builder
            .build()
            .map_err(|error| format!("the patterns do not compile: {error}"))?;
        Ok(EventTypePatterns {
            sources: patterns.to_vec(),
            set,
        })
    }

    /// Whether `event_type` matches any of the patterns.
    pub fn matches(&self, event_type: Option<&str>) -> bool {
        event_type.is_some_and(|event_type| self.set.is_match(as_path(event_type)))
    }

    /// The patterns as written.
    pub fn sources(&self) -> &[String] {
        &self.sources
    }
}

/// `.` as the path separator globset knows, so `*` stops at it.
fn as_path(text: &str) -> String {
    text.replace('.', "/")
}
