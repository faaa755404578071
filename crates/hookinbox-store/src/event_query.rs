//! The statement behind `events list`, written for the filters a request
//! actually sets, so that every list an operator can ask for is a range
//! scan of one index in list order, stopped after one page — never a scan
//! of the whole inbox, however many events it holds.
//!
//! A catch-all statement (`?1 IS NULL OR status = ?1`, …) cannot do that:
//! the planner must choose one plan for every combination, and with ORs it
//! chooses to walk the table. So the WHERE clause holds only the filters
//! given, and one of them *drives* the scan through its index:
//!
//! | driving filter | index |
//! |---|---|
//! | provider event id | `UNIQUE (endpoint_id, provider_event_id)`: with the endpoint a lookup; without it one lookup per endpoint, the endpoints found by skipping through `inbox_endpoint_received` |
//! | status | `inbox_status_received (status, received_at_ms)` |
//! | event type | `inbox_type_received (event_type, received_at_ms)` |
//! | endpoint | `inbox_endpoint_received (endpoint_id, received_at_ms)` |
//! | none (time range or nothing) | `inbox_received (received_at_ms)` |
//!
//! Each index ends with `received_at_ms`, the list's order, so the scan
//! reads rows in order and stops at `LIMIT`; a time range bounds the same
//! scan. The other filters are checked on the rows read. SQLite has no
//! statistics here to choose between indexes, so its statement says which
//! one drives: the other equality columns are written `+column`, which
//! keeps them out of index selection. The choice follows how selective a
//! filter usually is: FAILED and ACCEPTED events are few (a healthy inbox
//! is mostly PROCESSED), a type is narrower than an endpoint. PostgreSQL
//! keeps statistics and chooses by itself.
//!
//! The order is `received_at_ms DESC, id DESC` and a page continues below
//! its cursor (the last row's two keys), so events arriving meanwhile (newer)
//! never shift later pages.

use crate::{EventFilter, InboxStatus};

/// The SQL dialect: placeholders and the index hint differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// A bound value, in placeholder order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Text(String),
    Int(i64),
}

/// A statement and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Statement {
    pub sql: String,
    pub values: Vec<Value>,
}

/// The columns of an `EventSummary`, in its order.
const SUMMARY_COLUMNS: &str =
    "id, endpoint_id, provider, provider_event_id, event_type, status, received_at_ms";

/// Which filter's index the scan goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Driver {
    ProviderEventId,
    Status,
    EventType,
    Endpoint,
    Received,
}

impl Driver {
    fn for_filter(filter: &EventFilter) -> Driver {
        let rare_status = matches!(
            filter.status,
            Some(InboxStatus::Failed | InboxStatus::Accepted)
        );
        if filter.provider_event_id.is_some() {
            Driver::ProviderEventId
        } else if rare_status {
            Driver::Status
        } else if filter.event_type.is_some() {
            Driver::EventType
        } else if filter.endpoint_id.is_some() {
            Driver::Endpoint
        } else if filter.status.is_some() {
            Driver::Status
        } else {
            Driver::Received
        }
    }
}

/// Builds the statement clause by clause.
struct Builder {
    dialect: Dialect,
    values: Vec<Value>,
    clauses: Vec<String>,
}

impl Builder {
    fn placeholder(&mut self, value: Value) -> String {
        self.values.push(value);
        match self.dialect {
            Dialect::Sqlite => format!("?{}", self.values.len()),
            Dialect::Postgres => format!("${}", self.values.len()),
        }
    }

    /// `column = value`; on SQLite `+column` unless it drives the scan.
    fn equals(&mut self, column: &str, value: Value, drives: bool) {
        let placeholder = self.placeholder(value);
        let hint = if drives || self.dialect == Dialect::Postgres {
            ""
        } else {
            "+"
        };
        self.clauses.push(format!("{hint}{column} = {placeholder}"));
    }
}

/// The page of `filter`: at most `filter.page_size() + 1` rows (the extra
/// one says another page exists), in list order.
pub(crate) fn list_events(filter: &EventFilter, dialect: Dialect) -> Statement {
    let driver = Driver::for_filter(filter);
    let mut b = Builder {
        dialect,
        values: Vec::new(),
        clauses: Vec::new(),
    };
    let mut with = String::new();
    if let Some(event_id) = &filter.provider_event_id {
        match &filter.endpoint_id {
            Some(endpoint) => b.equals("endpoint_id", Value::Text(endpoint.clone()), true),
            None => {
                // The endpoints that have events, each found with one index
                // probe (a loose index scan), then one lookup in each.
                with = "WITH RECURSIVE endpoints (id) AS (
                            SELECT min(endpoint_id) FROM inbox
                            UNION ALL
                            SELECT (SELECT min(endpoint_id) FROM inbox WHERE endpoint_id > endpoints.id)
                            FROM endpoints WHERE endpoints.id IS NOT NULL
                        ) "
                .to_owned();
                b.clauses.push(
                    "endpoint_id IN (SELECT id FROM endpoints WHERE id IS NOT NULL)".to_owned(),
                );
            }
        }
        b.equals("provider_event_id", Value::Text(event_id.clone()), true);
    } else if let Some(endpoint) = &filter.endpoint_id {
        b.equals(
            "endpoint_id",
            Value::Text(endpoint.clone()),
            driver == Driver::Endpoint,
        );
    }
    if let Some(status) = filter.status {
        b.equals(
            "status",
            Value::Text(status.as_str().to_owned()),
            driver == Driver::Status,
        );
    }
    if let Some(event_type) = &filter.event_type {
        b.equals(
            "event_type",
            Value::Text(event_type.clone()),
            driver == Driver::EventType,
        );
    }
    if let Some(from) = filter.received_from_ms {
        let placeholder = b.placeholder(Value::Int(from));
        b.clauses.push(format!("received_at_ms >= {placeholder}"));
    }
    if let Some(before) = filter.received_before_ms {
        let placeholder = b.placeholder(Value::Int(before));
        b.clauses.push(format!("received_at_ms < {placeholder}"));
    }
    if let Some(cursor) = &filter.cursor {
        let at = b.placeholder(Value::Int(cursor.received_at_ms));
        let id = b.placeholder(Value::Text(cursor.id.clone()));
        // The first clause bounds the index range; the second is checked
        // only on rows of the cursor's own millisecond.
        b.clauses.push(format!(
            "received_at_ms <= {at} AND (received_at_ms < {at} OR id < {id})"
        ));
    }
    let limit = i64::try_from(filter.page_size().saturating_add(1)).unwrap_or(i64::MAX);
    let limit = b.placeholder(Value::Int(limit));
    let filters = if b.clauses.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", b.clauses.join(" AND "))
    };
    Statement {
        sql: format!(
            "{with}SELECT {SUMMARY_COLUMNS} FROM inbox{filters} \
             ORDER BY received_at_ms DESC, id DESC LIMIT {limit}"
        ),
        values: b.values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_filters_given_are_in_the_statement_and_one_drives() {
        let filter = EventFilter {
            status: Some(InboxStatus::Failed),
            endpoint_id: Some("stripe".into()),
            limit: 50,
            ..EventFilter::default()
        };
        let statement = list_events(&filter, Dialect::Sqlite);
        assert_eq!(
            statement.sql,
            "SELECT id, endpoint_id, provider, provider_event_id, event_type, status, received_at_ms \
             FROM inbox WHERE +endpoint_id = ?1 AND status = ?2 \
             ORDER BY received_at_ms DESC, id DESC LIMIT ?3"
        );
        assert_eq!(
            statement.values,
            vec![
                Value::Text("stripe".into()),
                Value::Text("FAILED".into()),
                Value::Int(51)
            ]
        );
        let postgres = list_events(&filter, Dialect::Postgres);
        assert!(
            postgres
                .sql
                .contains("WHERE endpoint_id = $1 AND status = $2"),
            "{}",
            postgres.sql
        );
    }

    #[test]
    fn a_common_status_gives_way_to_the_endpoint() {
        let filter = EventFilter {
            status: Some(InboxStatus::Processed),
            endpoint_id: Some("stripe".into()),
            ..EventFilter::default()
        };
        let sql = list_events(&filter, Dialect::Sqlite).sql;
        assert!(
            sql.contains("WHERE endpoint_id = ?1 AND +status = ?2"),
            "{sql}"
        );
    }
}
