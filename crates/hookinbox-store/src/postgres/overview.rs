//! The overview's counts on PostgreSQL (see [`crate::overview`]): each one
//! a range of one index, stopped at the cap.

use deadpool_postgres::Client;

use super::db_error::PgError;
use crate::overview::{
    CappedCount, EndpointOverview, Overview, OverviewQuery, TargetOverview, OVERVIEW_COUNT_CAP,
    OVERVIEW_WINDOW_MS, RATE_WINDOW_MS,
};

const CAP: i64 = OVERVIEW_COUNT_CAP as i64;

async fn count(
    client: &Client,
    sql: &str,
    values: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<CappedCount, PgError> {
    let statement = client.prepare_cached(sql).await?;
    let row = client.query_one(&statement, values).await?;
    Ok(CappedCount::of(row.try_get(0)?))
}

async fn optional_i64(
    client: &Client,
    sql: &str,
    values: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Option<i64>, PgError> {
    let statement = client.prepare_cached(sql).await?;
    Ok(client.query_one(&statement, values).await?.try_get(0)?)
}

pub(crate) async fn overview(client: &Client, query: &OverviewQuery) -> Result<Overview, PgError> {
    let since = query.now_ms.saturating_sub(OVERVIEW_WINDOW_MS);
    let received_last_minute = count(
        client,
        "SELECT count(*) FROM (SELECT 1 FROM inbox WHERE received_at_ms >= $1 LIMIT $2) recent",
        &[&query.now_ms.saturating_sub(RATE_WINDOW_MS), &CAP],
    )
    .await?;
    let mut endpoints = Vec::with_capacity(query.endpoints.len());
    for endpoint in &query.endpoints {
        endpoints.push(EndpointOverview {
            endpoint_id: endpoint.clone(),
            received_24h: count(
                client,
                "SELECT count(*) FROM (SELECT 1 FROM inbox
                 WHERE endpoint_id = $1 AND received_at_ms >= $2 LIMIT $3) recent",
                &[endpoint, &since, &CAP],
            )
            .await?,
            failed_24h: count(
                client,
                "SELECT count(*) FROM (SELECT 1 FROM inbox
                 WHERE status = 'FAILED' AND endpoint_id = $1 AND received_at_ms >= $2 LIMIT $3) failed",
                &[endpoint, &since, &CAP],
            )
            .await?,
            last_received_at_ms: optional_i64(
                client,
                "SELECT max(received_at_ms) FROM inbox WHERE endpoint_id = $1",
                &[endpoint],
            )
            .await?,
        });
    }
    let mut targets = Vec::with_capacity(query.targets.len());
    for (endpoint, target) in &query.targets {
        // The status written into the statement, not bound: only then
        // can the plan use the partial indexes on PENDING and LEASED rows.
        let deliveries = |status: &'static str| async move {
            let sql = format!(
                "SELECT count(*) FROM (SELECT 1 FROM delivery
                 WHERE endpoint_id = $1 AND target = $2 AND status = '{status}' LIMIT $3) waiting"
            );
            count(client, &sql, &[endpoint, target, &CAP]).await
        };
        targets.push(TargetOverview {
            endpoint_id: endpoint.clone(),
            target: target.clone(),
            pending: deliveries("PENDING").await?,
            leased: deliveries("LEASED").await?,
            oldest_due_at_ms: optional_i64(
                client,
                "SELECT min(next_attempt_at_ms) FROM delivery
                 WHERE endpoint_id = $1 AND target = $2 AND status = 'PENDING'",
                &[endpoint, target],
            )
            .await?,
            failed_24h: count(
                client,
                "SELECT count(*) FROM (SELECT 1 FROM inbox i
                 WHERE i.status = 'FAILED' AND i.endpoint_id = $1 AND i.received_at_ms >= $3
                   AND EXISTS (SELECT 1 FROM delivery d
                               WHERE d.inbox_id = i.id AND d.target = $2 AND d.status = 'DEAD')
                 LIMIT $4) failed",
                &[endpoint, target, &since, &CAP],
            )
            .await?,
        });
    }
    Ok(Overview {
        now_ms: query.now_ms,
        received_last_minute,
        endpoints,
        targets,
    })
}
