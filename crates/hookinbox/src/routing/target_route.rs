//! One target's routing rules: `event_types` and `filter`, both optional;
//! a target with neither takes every event.

use serde::{Serialize, Serializer};

use super::event_type_patterns::EventTypePatterns;
use super::target_filter::{FilterRunError, TargetFilter};

/// A target's compiled `event_types` and `filter`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TargetRoute {
    /// Absent: every type.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_patterns"
    )]
    pub event_types: Option<EventTypePatterns>,
    /// Absent: every event.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_filter"
    )]
    pub filter: Option<TargetFilter>,
}

impl TargetRoute {
    /// Whether the event goes to this target: its type matches a pattern
    /// (checked first: cheap) and the filter answers true. `input` is asked
    /// for only when there is a filter to run.
    pub fn matches<'c>(
        &self,
        event_type: Option<&str>,
        input: impl FnOnce() -> &'c cel::Context<'static, 'static>,
    ) -> Result<bool, FilterRunError> {
        if let Some(patterns) = &self.event_types {
            if !patterns.matches(event_type) {
                return Ok(false);
            }
        }
        match &self.filter {
            Some(filter) => filter.matches(input()),
            None => Ok(true),
        }
    }
}

fn serialize_patterns<S: Serializer>(
    patterns: &Option<EventTypePatterns>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    patterns
        .as_ref()
        .map(EventTypePatterns::sources)
        .serialize(serializer)
}

fn serialize_filter<S: Serializer>(
    filter: &Option<TargetFilter>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    filter
        .as_ref()
        .map(TargetFilter::source)
        .serialize(serializer)
}
