//! A target's `filter`: one CEL expression over `event`, `headers` and
//! `body` that must answer a boolean.

use std::sync::Arc;

use cel::{Program, Value};

use super::filter_input::{FilterInput, RoutedEvent};

/// A compiled filter, with the text it was written as.
#[derive(Debug, Clone)]
pub struct TargetFilter {
    source: String,
    program: Arc<Program>,
}

/// Why a filter is refused when the configuration is read.
#[derive(Debug, thiserror::Error)]
pub enum FilterCompileError {
    /// The text is not CEL; the parser's message says where
    /// (`<input>:line:column`).
    #[error("does not parse: {0}")]
    Syntax(String),
    /// It parses, but over every event's fields it fails or answers
    /// something other than a boolean.
    #[error("{0}")]
    Type(String),
}

/// Why a filter gave no answer for one event; the target is then not
/// matched. Says what kind of failure only: CEL's own message quotes
/// values, which come from the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FilterRunError {
    /// A field or header the expression reads is not there.
    #[error("a field it reads is missing")]
    MissingField,
    /// `body` is read, but the body is neither JSON nor a form.
    #[error("a variable it reads is absent (body of another content type)")]
    AbsentVariable,
    /// An operation on values of the wrong type, or one that failed.
    #[error("an operation failed (wrong type, overflow, division by zero)")]
    Failed,
    /// The answer was not a boolean.
    #[error("the answer is not a boolean")]
    NotBoolean,
}

impl FilterRunError {
    fn from_execution(error: &cel::ExecutionError) -> FilterRunError {
        match error {
            cel::ExecutionError::NoSuchKey(_) => FilterRunError::MissingField,
            cel::ExecutionError::UndeclaredReference(_) => FilterRunError::AbsentVariable,
            _ => FilterRunError::Failed,
        }
    }
}

impl TargetFilter {
    /// Parses `source`, then runs it once over a probe event whose `event`
    /// fields have their real types and whose `headers` and `body` are
    /// empty: an expression that fails on `event` alone (`event.type > 5`,
    /// a misspelt variable) or answers a non-boolean is refused now rather
    /// than failing on every event. What depends on `body` or `headers`
    /// (a missing field) can only fail at run time.
    pub fn compile(source: &str) -> Result<TargetFilter, FilterCompileError> {
        let program = Program::compile(source)
            .map_err(|errors| FilterCompileError::Syntax(errors.to_string()))?;
        let filter = TargetFilter {
            source: source.to_owned(),
            program: Arc::new(program),
        };
        filter.probe()?;
        Ok(filter)
    }

    fn probe(&self) -> Result<(), FilterCompileError> {
        let probe = FilterInput::new(&RoutedEvent {
            provider: "stripe",
            endpoint: "endpoint",
            id: "evt_probe",
            event_type: Some("probe.event"),
            received_at_ms: 0,
            matched_secret_version: "v1",
            headers: &[],
            content_type: Some("application/json"),
            body: b"{}",
        });
        match self.program.execute(&probe.context()) {
            Ok(Value::Bool(_)) => Ok(()),
            Ok(other) => Err(FilterCompileError::Type(format!(
                "answers {}, not a boolean",
                other.type_of()
            ))),
            // A field the empty body or headers lack is data, not a type error.
            Err(cel::ExecutionError::NoSuchKey(_)) => Ok(()),
            Err(error) => Err(FilterCompileError::Type(error.to_string())),
        }
    }

    /// Whether `input` passes the filter.
    pub fn matches(&self, input: &cel::Context<'_, '_>) -> Result<bool, FilterRunError> {
        match self.program.execute(input) {
            Ok(Value::Bool(matched)) => Ok(matched),
            Ok(_) => Err(FilterRunError::NotBoolean),
            Err(error) => Err(FilterRunError::from_execution(&error)),
        }
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }
}
