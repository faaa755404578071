//! The backlog on SQLite, for the metrics sampler (see [`crate::backlog`]):
//! each number is one range scan of an index, read on the reader's
//! connection, never the writer's.
//!
//! - oldest unprocessed: `inbox_status_received` (status, received_at_ms),
//!   walked in order from the oldest ACCEPTED row to the first of the
//!   endpoint — it stops at once when the endpoint has a backlog, and
//!   reads the other endpoints' ACCEPTED rows when it has none;
//! - open deliveries and the earliest due: `delivery_due` (endpoint_id,
//!   target, status, next_attempt_at_ms);
//! - rows by status: a count over `inbox_status_received`.

use rusqlite::{params, OptionalExtension};

use super::reader::SqliteReader;
use crate::{Backlog, InboxStatus, StoreError, TargetBacklog, TargetRef};

const OLDEST_UNPROCESSED: &str = "
    SELECT received_at_ms FROM inbox
    WHERE status = 'ACCEPTED' AND endpoint_id = ?1
    ORDER BY received_at_ms LIMIT 1";

const TARGET_OPEN: &str = "
    SELECT count(*) FROM delivery
    WHERE endpoint_id = ?1 AND target = ?2 AND status IN ('PENDING', 'LEASED')";

const TARGET_EARLIEST_DUE: &str = "
    SELECT min(next_attempt_at_ms) FROM delivery
    WHERE endpoint_id = ?1 AND target = ?2 AND status = 'PENDING'";

impl SqliteReader {
    pub(crate) fn backlog(
        &self,
        endpoints: &[String],
        targets: &[TargetRef],
    ) -> Result<Backlog, StoreError> {
        self.with_conn(|conn| {
            let mut backlog = Backlog::default();
            let mut oldest = conn.prepare_cached(OLDEST_UNPROCESSED)?;
            for endpoint in endpoints {
                let found: Option<i64> = oldest
                    .query_row(params![endpoint], |row| row.get(0))
                    .optional()?;
                if let Some(received_at_ms) = found {
                    backlog
                        .oldest_unprocessed_ms
                        .insert(endpoint.clone(), received_at_ms);
                }
            }
            let mut open = conn.prepare_cached(TARGET_OPEN)?;
            let mut due = conn.prepare_cached(TARGET_EARLIEST_DUE)?;
            for target in targets {
                let key = params![target.endpoint_id, target.target];
                let count: i64 = open.query_row(key, |row| row.get(0))?;
                let earliest_due_ms: Option<i64> = due.query_row(key, |row| row.get(0))?;
                backlog.targets.push(TargetBacklog {
                    endpoint_id: target.endpoint_id.clone(),
                    target: target.target.clone(),
                    open: u64::try_from(count).unwrap_or(0),
                    earliest_due_ms,
                });
            }
            Ok(backlog)
        })
    }

    pub(crate) fn count_by_status(&self, status: InboxStatus) -> Result<u64, StoreError> {
        self.with_conn(|conn| {
            let count: i64 = conn
                .prepare_cached("SELECT count(*) FROM inbox WHERE status = ?1")?
                .query_row(params![status.as_str()], |row| row.get(0))?;
            Ok(u64::try_from(count).unwrap_or(0))
        })
    }
}
