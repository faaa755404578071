//! A target's `filter`: one CEL expression over `event`, `headers` and
//! `body` that must answer a boolean.

use std::sync::Arc;

use cel::{IdedExpr, Program, Value};

use super::body_paths::BodyPaths;
use super::filter_input::{FilterInput, RoutedEvent};
use super::filter_position::{failing_part, operands, position_of, start_of, FilterPosition};

/// A compiled filter, with the text it was written as.
#[derive(Debug, Clone)]
pub struct TargetFilter {
    source: String,
    program: Arc<Program>,
    /// What of `body` it reads.
    body_paths: Arc<BodyPaths>,
}

/// Why a filter is refused when the configuration is read.
#[derive(Debug, thiserror::Error)]
pub enum FilterCompileError {
    /// The text is not CEL: the parser's first complaint, and where.
    #[error("does not parse at {at}: {why}{}", and_more(.more))]
    Syntax {
        at: FilterPosition,
        why: String,
        /// Further complaints, not shown.
        more: usize,
    },
    /// It parses, but fails or answers something other than a boolean
    /// over every event's fields (`over` is `None`), or over a sample
    /// event of the endpoint's provider (`over` names it). `at` is where
    /// in the text, when the parser recorded it.
    #[error("{}{why}{}", at_prefix(.at), over_suffix(.over))]
    Type {
        at: Option<FilterPosition>,
        why: String,
        over: Option<String>,
    },
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
        let program = Program::compile(source).map_err(syntax_error)?;
        let filter = TargetFilter {
            source: source.to_owned(),
            body_paths: Arc::new(BodyPaths::read_by(program.expression())),
            program: Arc::new(program),
        };
        filter.probe()?;
        Ok(filter)
    }

    fn probe(&self) -> Result<(), FilterCompileError> {
        let probe = FilterInput::new(
            &RoutedEvent {
                provider: "stripe",
                endpoint: "endpoint",
                id: "evt_probe",
                event_type: Some("probe.event"),
                received_at_ms: 0,
                matched_secret_version: "v1",
                headers: &[],
                content_type: Some("application/json"),
                body: b"{}",
            },
            &BodyPaths::Whole,
        );
        self.type_check(&probe, None)
    }

    /// Runs the filter over a real event of the endpoint's provider (the
    /// samples `hookinbox send` bundles): a comparison or an operation on
    /// values of the wrong types there (`body.total_price > 100` where
    /// Shopify sends the price as a string) is refused now, rather than
    /// making the target miss every such event. A field the sample lacks,
    /// or holds as `null`, is data, not a type error.
    pub fn check_over(
        &self,
        sample: &RoutedEvent<'_>,
        name: &str,
    ) -> Result<(), FilterCompileError> {
        self.type_check(&FilterInput::new(sample, &BodyPaths::Whole), Some(name))
    }

    fn type_check(
        &self,
        input: &FilterInput,
        over: Option<&str>,
    ) -> Result<(), FilterCompileError> {
        let check = TypeCheck {
            context: input.context(),
            info: self.program.source_info(),
            over,
        };
        let root = self.program.expression();
        match self.program.execute(&check.context) {
            Ok(Value::Bool(_)) | Err(_) => {}
            Ok(other) if over.is_some() && matches!(other, Value::Null) => {}
            Ok(other) => {
                return Err(check.refused(
                    start_of(root, check.info),
                    format!("answers {}, not a boolean", other.type_of()),
                ))
            }
        }
        check.part(root)
    }

    /// Whether `input` passes the filter.
    pub fn matches(&self, input: &cel::Context<'_, '_>) -> Result<bool, FilterRunError> {
        match self.program.execute(input) {
            Ok(Value::Bool(matched)) => Ok(matched),
            Ok(_) => Err(FilterRunError::NotBoolean),
            Err(error) => Err(FilterRunError::from_execution(&error)),
        }
    }

    /// What of `body` it reads.
    pub fn body_paths(&self) -> &BodyPaths {
        &self.body_paths
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }
}

/// One filter checked over one event's variables: every branch of `&&`,
/// `||` and `?:` on its own, because over this event the others may be
/// skipped (`event.type == "a" && event.received_at_ms > "x"` never reaches
/// its comparison when the type is not `a`, yet fails on every event that
/// has it).
struct TypeCheck<'a> {
    context: cel::Context<'static, 'static>,
    info: &'a cel::common::ast::SourceInfo,
    /// The sample event's name; `None` for the probe of empty fields.
    over: Option<&'a str>,
}

impl TypeCheck<'_> {
    fn refused(&self, at: Option<FilterPosition>, why: String) -> FilterCompileError {
        FilterCompileError::Type {
            at,
            why,
            over: self.over.map(str::to_owned),
        }
    }

    fn part(&self, expr: &IdedExpr) -> Result<(), FilterCompileError> {
        if let Some(branches) = branches(expr) {
            for (branch, must_be_boolean) in branches {
                self.part(branch)?;
                if !must_be_boolean {
                    continue;
                }
                match Value::resolve(branch, &self.context) {
                    Ok(Value::Bool(_)) | Err(_) => {}
                    Ok(Value::Null) if self.over.is_some() => {}
                    Ok(other) => {
                        return Err(self.refused(
                            start_of(branch, self.info),
                            format!("answers {}, not a boolean", other.type_of()),
                        ))
                    }
                }
            }
            return Ok(());
        }
        match Value::resolve(expr, &self.context) {
            // A field the body or headers lack is data, not a type error.
            Ok(_) | Err(cel::ExecutionError::NoSuchKey(_)) => Ok(()),
            Err(error) => {
                let part = failing_part(expr, &self.context);
                let null_operand = operands(part).into_iter().any(|operand| {
                    matches!(Value::resolve(operand, &self.context), Ok(Value::Null))
                });
                let missing = matches!(
                    Value::resolve(part, &self.context),
                    Err(cel::ExecutionError::NoSuchKey(_))
                );
                if self.over.is_some() && (null_operand || missing) {
                    return Ok(());
                }
                Err(self.refused(position_of(part, self.info), explain(&error)))
            }
        }
    }
}

/// The operands of a `&&` or `||` (each must be a boolean) and of a `?:`
/// (its condition must be), which CEL may skip, each with whether it must
/// be a boolean; `None` for any other expression.
fn branches(expr: &IdedExpr) -> Option<Vec<(&IdedExpr, bool)>> {
    let cel::common::ast::Expr::Call(call) = &expr.expr else {
        return None;
    };
    match call.func_name.as_str() {
        "_&&_" | "_||_" => Some(call.args.iter().map(|arg| (arg, true)).collect()),
        "_?_:_" => Some(
            call.args
                .iter()
                .enumerate()
                .map(|(index, arg)| (arg, index == 0))
                .collect(),
        ),
        _ => None,
    }
}

fn and_more(more: &usize) -> String {
    match more {
        0 => String::new(),
        more => format!(" (and {more} more)"),
    }
}

fn at_prefix(at: &Option<FilterPosition>) -> String {
    at.map(|at| format!("at {at}: ")).unwrap_or_default()
}

fn over_suffix(over: &Option<String>) -> String {
    over.as_ref()
        .map(|over| format!(" (over {over})"))
        .unwrap_or_default()
}

/// The parser's first error as one line (its own rendering adds the
/// source line and a caret below).
fn syntax_error(errors: cel::ParseErrors) -> FilterCompileError {
    let more = errors.errors.len().saturating_sub(1);
    match errors.errors.into_iter().next() {
        Some(first) => FilterCompileError::Syntax {
            at: FilterPosition {
                line: usize::try_from(first.pos.0).unwrap_or(0),
                column: usize::try_from(first.pos.1).unwrap_or(0),
            },
            why: first.msg,
            more,
        },
        None => FilterCompileError::Syntax {
            at: FilterPosition { line: 1, column: 1 },
            why: "not CEL".to_owned(),
            more: 0,
        },
    }
}

/// CEL's error in words that name types, not the probe's values.
fn explain(error: &cel::ExecutionError) -> String {
    match error {
        cel::ExecutionError::UndeclaredReference(name) => format!(
            "`{name}` is not a variable or function here (the variables are event, headers and body)"
        ),
        cel::ExecutionError::ValuesNotComparable(left, right) => {
            format!("compares {} with {}", left.type_of(), right.type_of())
        }
        cel::ExecutionError::UnsupportedBinaryOperator(operator, left, right) => format!(
            "`{}` does not apply to {} and {}",
            operator_symbol(operator),
            left.type_of(),
            right.type_of()
        ),
        cel::ExecutionError::NoSuchOverload(overload) => {
            // Operators are named `_>_`, `_+_`, …; functions by their name.
            let function = overload.function();
            let operator = function
                .strip_prefix('_')
                .and_then(|f| f.strip_suffix('_'))
                .unwrap_or_else(|| operator_symbol(function));
            match overload.argument_types() {
                [left, right] if matches!(operator, "<" | "<=" | ">" | ">=" | "==" | "!=") => {
                    format!("compares {left} with {right}")
                }
                [left, right] if operator != function => {
                    format!("`{operator}` does not apply to {left} and {right}")
                }
                types => format!("`{function}` does not apply to ({})", types.join(", ")),
            }
        }
        other => other.to_string(),
    }
}

/// The symbol of an arithmetic operator CEL names in words.
fn operator_symbol(name: &str) -> &str {
    match name {
        "add" => "+",
        "sub" => "-",
        "mul" => "*",
        "div" => "/",
        "rem" => "%",
        other => other,
    }
}
