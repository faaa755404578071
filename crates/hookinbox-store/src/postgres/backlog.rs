//! The backlog on PostgreSQL, for the metrics sampler (see
//! [`crate::backlog`]). Each statement names its status as a literal, so
//! the planner can use the partial indexes: `delivery_due` (PENDING, by
//! endpoint, target and due time), `delivery_leased` (LEASED), and
//! `inbox_status_received` for the ACCEPTED rows.

use deadpool_postgres::GenericClient;

use super::db_error::PgError;
use crate::{Backlog, InboxStatus, TargetBacklog, TargetRef};

pub(crate) async fn backlog(
    client: &impl GenericClient,
    endpoints: &[String],
    targets: &[TargetRef],
) -> Result<Backlog, PgError> {
    let mut backlog = Backlog::default();
    let oldest = client
        .prepare_cached(
            "SELECT received_at_ms FROM inbox
             WHERE status = 'ACCEPTED' AND endpoint_id = $1
             ORDER BY received_at_ms LIMIT 1",
        )
        .await?;
    for endpoint in endpoints {
        if let Some(row) = client.query_opt(&oldest, &[endpoint]).await? {
            backlog
                .oldest_unprocessed_ms
                .insert(endpoint.clone(), row.try_get(0)?);
        }
    }
    let pending = client
        .prepare_cached(
            "SELECT count(*), min(next_attempt_at_ms) FROM delivery
             WHERE endpoint_id = $1 AND target = $2 AND status = 'PENDING'",
        )
        .await?;
    let leased = client
        .prepare_cached(
            "SELECT count(*) FROM delivery
             WHERE endpoint_id = $1 AND target = $2 AND status = 'LEASED'",
        )
        .await?;
    for target in targets {
        let key: [&(dyn tokio_postgres::types::ToSql + Sync); 2] =
            [&target.endpoint_id, &target.target];
        let row = client.query_one(&pending, &key).await?;
        let pending_count: i64 = row.try_get(0)?;
        let earliest_due_ms: Option<i64> = row.try_get(1)?;
        let leased_count: i64 = client.query_one(&leased, &key).await?.try_get(0)?;
        backlog.targets.push(TargetBacklog {
            endpoint_id: target.endpoint_id.clone(),
            target: target.target.clone(),
            open: u64::try_from(pending_count + leased_count).unwrap_or(0),
            earliest_due_ms,
        });
    }
    Ok(backlog)
}

pub(crate) async fn count_by_status(
    client: &impl GenericClient,
    status: InboxStatus,
) -> Result<u64, PgError> {
    let statement = client
        .prepare_cached("SELECT count(*) FROM inbox WHERE status = $1")
        .await?;
    let count: i64 = client
        .query_one(&statement, &[&status.as_str()])
        .await?
        .try_get(0)?;
    Ok(u64::try_from(count).unwrap_or(0))
}
