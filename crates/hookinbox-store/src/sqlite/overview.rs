//! The overview's counts on SQLite (see [`crate::overview`]): each one a
//! range of one index, stopped at the cap. SQLite has no statistics here
//! to choose indexes by, so a column that must not pick the index is
//! written `+column`.

use rusqlite::{params, Connection, OptionalExtension};

use crate::overview::{
    CappedCount, EndpointOverview, Overview, OverviewQuery, TargetOverview, OVERVIEW_COUNT_CAP,
    OVERVIEW_WINDOW_MS, RATE_WINDOW_MS,
};

const CAP: i64 = OVERVIEW_COUNT_CAP as i64;

pub(crate) fn overview(
    conn: &Connection,
    query: &OverviewQuery,
) -> Result<Overview, rusqlite::Error> {
    let since = query.now_ms.saturating_sub(OVERVIEW_WINDOW_MS);
    let count = |sql: &str, values: &[&dyn rusqlite::ToSql]| {
        conn.prepare_cached(sql)?
            .query_row(values, |row| row.get::<_, i64>(0))
            .map(CappedCount::of)
    };
    let received_last_minute = count(
        "SELECT count(*) FROM (SELECT 1 FROM inbox WHERE received_at_ms >= ?1 LIMIT ?2)",
        params![query.now_ms.saturating_sub(RATE_WINDOW_MS), CAP],
    )?;
    let mut endpoints = Vec::with_capacity(query.endpoints.len());
    for endpoint in &query.endpoints {
        endpoints.push(EndpointOverview {
            endpoint_id: endpoint.clone(),
            received_24h: count(
                "SELECT count(*) FROM (SELECT 1 FROM inbox
                 WHERE endpoint_id = ?1 AND received_at_ms >= ?2 LIMIT ?3)",
                params![endpoint, since, CAP],
            )?,
            failed_24h: count(
                "SELECT count(*) FROM (SELECT 1 FROM inbox
                 WHERE status = 'FAILED' AND +endpoint_id = ?1 AND received_at_ms >= ?2 LIMIT ?3)",
                params![endpoint, since, CAP],
            )?,
            last_received_at_ms: conn
                .prepare_cached("SELECT max(received_at_ms) FROM inbox WHERE endpoint_id = ?1")?
                .query_row(params![endpoint], |row| row.get(0))
                .optional()?
                .flatten(),
        });
    }
    let mut targets = Vec::with_capacity(query.targets.len());
    for (endpoint, target) in &query.targets {
        let deliveries = |status: &str| {
            count(
                "SELECT count(*) FROM (SELECT 1 FROM delivery
                 WHERE endpoint_id = ?1 AND target = ?2 AND status = ?3 LIMIT ?4)",
                params![endpoint, target, status, CAP],
            )
        };
        targets.push(TargetOverview {
            endpoint_id: endpoint.clone(),
            target: target.clone(),
            pending: deliveries("PENDING")?,
            leased: deliveries("LEASED")?,
            oldest_due_at_ms: conn
                .prepare_cached(
                    "SELECT min(next_attempt_at_ms) FROM delivery
                     WHERE endpoint_id = ?1 AND target = ?2 AND status = 'PENDING'",
                )?
                .query_row(params![endpoint, target], |row| row.get(0))
                .optional()?
                .flatten(),
            failed_24h: count(
                "SELECT count(*) FROM (SELECT 1 FROM inbox i
                 WHERE i.status = 'FAILED' AND +i.endpoint_id = ?1 AND i.received_at_ms >= ?3
                   AND EXISTS (SELECT 1 FROM delivery d
                               WHERE d.inbox_id = i.id AND d.target = ?2 AND d.status = 'DEAD')
                 LIMIT ?4)",
                params![endpoint, target, since, CAP],
            )?,
        });
    }
    Ok(Overview {
        now_ms: query.now_ms,
        received_last_minute,
        endpoints,
        targets,
    })
}
