//! Where in a `filter` an evaluation failed, as `line:column`, for the
//! errors `config check` prints. CEL's evaluator says what failed but not
//! where; the parser records where each sub-expression starts. So the
//! expression is walked from the top: the first operand that fails on its
//! own is descended into, and the innermost sub-expression that fails
//! while its operands do not is the place (the `>` of `body.x > "a"`, the
//! `evnt` of `evnt.type`). Comprehensions (`exists`, `all`, …) are not
//! entered: their variables exist only inside them.

use cel::common::ast::{EntryExpr, Expr, SourceInfo};
use cel::{Context, IdedExpr, Value};

/// A place in the filter's text, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterPosition {
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for FilterPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// The innermost sub-expression of `root` that fails in `context` while
/// its operands evaluate (`root` itself when none of its operands fails).
pub fn failing_part<'e>(root: &'e IdedExpr, context: &Context<'_, '_>) -> &'e IdedExpr {
    let mut at = root;
    'down: loop {
        for operand in operands(at) {
            if Value::resolve(operand, context).is_err() {
                at = operand;
                continue 'down;
            }
        }
        return at;
    }
}

/// The operands of `expr` that evaluate in the same variables as it.
pub fn operands(expr: &IdedExpr) -> Vec<&IdedExpr> {
    match &expr.expr {
        Expr::Call(call) => call
            .target
            .as_deref()
            .into_iter()
            .chain(&call.args)
            .collect(),
        Expr::Select(select) => vec![select.operand.as_ref()],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => map
            .entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(entry) => vec![&entry.key, &entry.value],
                EntryExpr::StructField(field) => vec![&field.value],
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Where `expr` starts in `source`, as the parser recorded it.
pub fn position_of(expr: &IdedExpr, info: &SourceInfo) -> Option<FilterPosition> {
    let (start, _) = info.offset_for(expr.id)?;
    let start = usize::try_from(start).ok()?;
    let mut line_start = 0;
    for (index, line) in info.source.split_inclusive('\n').enumerate() {
        // The parser's offsets count characters, not bytes.
        let line_end = line_start + line.chars().count();
        if start < line_end {
            let column = start - line_start + 1;
            return Some(FilterPosition {
                line: index + 1,
                column,
            });
        }
        line_start = line_end;
    }
    None
}

/// Where the text of `expr` starts: the first of its own and its
/// sub-expressions' recorded positions (a call is recorded at its operator,
/// a selection at its dot).
pub fn start_of(expr: &IdedExpr, info: &SourceInfo) -> Option<FilterPosition> {
    let mut first: Option<&IdedExpr> = None;
    let mut first_offset = i64::MAX;
    let mut pending = vec![expr];
    while let Some(at) = pending.pop() {
        if let Some((start, _)) = info.offset_for(at.id) {
            let start = i64::from(start);
            if start < first_offset {
                first_offset = start;
                first = Some(at);
            }
        }
        pending.extend(children(at));
    }
    position_of(first?, info)
}

/// Every direct sub-expression of `expr`, comprehensions included.
fn children(expr: &IdedExpr) -> Vec<&IdedExpr> {
    match &expr.expr {
        Expr::Comprehension(comprehension) => vec![
            &comprehension.iter_range,
            &comprehension.accu_init,
            &comprehension.loop_cond,
            &comprehension.loop_step,
            &comprehension.result,
        ],
        Expr::Struct(fields) => fields
            .entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(entry) => vec![&entry.key, &entry.value],
                EntryExpr::StructField(field) => vec![&field.value],
            })
            .collect(),
        _ => operands(expr),
    }
}
