//! The parts of `body` a filter reads, so that only those are turned into
//! CEL values. Converting a whole body allocates a string for every key
//! and value of it; a filter such as `body.data.object.amount > 1000`
//! reads one field. The paths are found in the parsed expression once,
//! when the configuration is read.
//!
//! Only a chain of field selections from `body` (`body.data.object`,
//! `has(body.data.object.amount)`) is a path: the value at its end is
//! converted whole, and every map on the way keeps only the keys some path
//! names. Any other use of `body` (`body["data"]`, `size(body)`, `body` as
//! a comprehension's range or a function's argument) reads it whole. A
//! selection reads nothing of a map but the selected key, so a filter sees
//! the same values, the same missing fields and the same type errors as
//! over the whole body.

use std::collections::BTreeMap;
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr};
use cel::objects::{Key, Map};
use cel::{IdedExpr, Value};

/// What of `body` an expression reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyPaths {
    /// All of it.
    Whole,
    /// These keys of it (a map), each read as its own paths say; no key at
    /// all when the expression does not read `body`.
    Fields(BTreeMap<String, BodyPaths>),
}

impl BodyPaths {
    /// What `expr` reads of `body`.
    pub fn read_by(expr: &IdedExpr) -> BodyPaths {
        let mut paths = BodyPaths::Fields(BTreeMap::new());
        let mut pending = vec![expr];
        while let Some(at) = pending.pop() {
            if let Some(path) = body_path(at) {
                paths.insert(&path);
                continue;
            }
            if matches!(&at.expr, Expr::Ident(name) if name == "body") {
                return BodyPaths::Whole;
            }
            pending.extend(children(at));
        }
        paths
    }

    /// Adds what `other` reads to what this reads.
    pub fn merge(&mut self, other: &BodyPaths) {
        match (&mut *self, other) {
            (BodyPaths::Whole, _) => {}
            (_, BodyPaths::Whole) => *self = BodyPaths::Whole,
            (BodyPaths::Fields(mine), BodyPaths::Fields(theirs)) => {
                for (name, paths) in theirs {
                    match mine.get_mut(name) {
                        Some(read) => read.merge(paths),
                        None => {
                            mine.insert(name.clone(), paths.clone());
                        }
                    }
                }
            }
        }
    }

    /// Adds one path: the value at its end is read whole.
    fn insert(&mut self, path: &[&str]) {
        let BodyPaths::Fields(fields) = self else {
            return;
        };
        match path.split_first() {
            None => *self = BodyPaths::Whole,
            Some((first, rest)) => fields
                .entry((*first).to_owned())
                .or_insert_with(|| BodyPaths::Fields(BTreeMap::new()))
                .insert(rest),
        }
    }

    /// `json` as CEL values, keeping only what these paths read (whole
    /// numbers as `int`, so `amount > 1000` compares without a cast;
    /// others as `double`).
    pub fn convert(&self, json: &serde_json::Value) -> Value {
        match (self, json) {
            (BodyPaths::Fields(read), serde_json::Value::Object(fields)) => map(read
                .iter()
                .filter_map(|(name, paths)| {
                    let value = fields.get(name)?;
                    Some((Key::String(Arc::new(name.clone())), paths.convert(value)))
                })
                .collect()),
            // A selection from a value that is not a map fails the same way
            // whatever that value holds, so it is converted whole.
            (_, json) => from_json(json),
        }
    }
}

/// The field names of `expr` when it is a chain of selections from `body`
/// (`body.data.object` is `["data", "object"]`), in order.
fn body_path(expr: &IdedExpr) -> Option<Vec<&str>> {
    let mut fields = Vec::new();
    let mut at = expr;
    loop {
        match &at.expr {
            Expr::Select(select) => {
                fields.push(select.field.as_str());
                at = &select.operand;
            }
            Expr::Ident(name) if name == "body" && !fields.is_empty() => {
                fields.reverse();
                return Some(fields);
            }
            _ => return None,
        }
    }
}

/// Every direct sub-expression of `expr`.
fn children(expr: &IdedExpr) -> Vec<&IdedExpr> {
    match &expr.expr {
        Expr::Call(call) => call
            .target
            .as_deref()
            .into_iter()
            .chain(&call.args)
            .collect(),
        Expr::Select(select) => vec![select.operand.as_ref()],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => entries(&map.entries),
        Expr::Struct(fields) => entries(&fields.entries),
        Expr::Comprehension(comprehension) => vec![
            &comprehension.iter_range,
            &comprehension.accu_init,
            &comprehension.loop_cond,
            &comprehension.loop_step,
            &comprehension.result,
        ],
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Vec::new(),
    }
}

fn entries(entries: &[cel::common::ast::IdedEntryExpr]) -> Vec<&IdedExpr> {
    entries
        .iter()
        .flat_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(entry) => vec![&entry.key, &entry.value],
            EntryExpr::StructField(field) => vec![&field.value],
        })
        .collect()
}

/// All of `json` as CEL values.
pub fn from_json(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(from_json).collect()))
        }
        serde_json::Value::Object(fields) => map(fields
            .iter()
            .map(|(name, value)| (Key::String(Arc::new(name.clone())), from_json(value)))
            .collect()),
    }
}

fn map(fields: std::collections::HashMap<Key, Value>) -> Value {
    Value::Map(Map {
        map: Arc::new(fields),
    })
}
