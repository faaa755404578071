//! An endpoint's stream of accepted events on PostgreSQL, in
//! `(stream_xact, id)` order, read only below the horizon: the xmin of a
//! snapshot taken by an earlier statement, below which every transaction
//! has ended (see `event_stream` for why this cannot skip a row).

use deadpool_postgres::Client;

use super::db_error::PgError;
use crate::event_stream::{uuid_v7_floor, StreamCursor, StreamedEvent};

/// Every transaction with a lower id has committed or rolled back.
const HORIZON: &str = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::int8";

/// The lowest place of an event received at or after $3; $2 is the lowest
/// inbox id of that millisecond, so the primary key bounds the walk.
const FIRST_POSITION_SINCE: &str = "
    SELECT stream_xact::text::int8 FROM inbox
    WHERE endpoint_id = $1 AND id >= $2 AND received_at_ms >= $3
    ORDER BY stream_xact LIMIT 1";

const EVENTS_AFTER: &str = "
    SELECT stream_xact::text::int8, id, provider, provider_event_id, event_type,
           received_at_ms, content_type
    FROM inbox
    WHERE endpoint_id = $1 AND (stream_xact, id) > ($2::int8::text::xid8, $3)
      AND stream_xact < $4::int8::text::xid8
    ORDER BY stream_xact, id LIMIT $5";

async fn horizon(client: &Client) -> Result<i64, PgError> {
    let statement = client.prepare_cached(HORIZON).await?;
    Ok(client.query_one(&statement, &[]).await?.try_get(0)?)
}

/// From the horizon (every row at or above it is still to come, or
/// committed a moment ago), or from the first event received at or after
/// `since_ms` if that is lower.
pub(super) async fn start(
    client: &Client,
    endpoint_id: &str,
    since_ms: Option<i64>,
) -> Result<StreamCursor, PgError> {
    let horizon = horizon(client).await?;
    let Some(since_ms) = since_ms else {
        return Ok(StreamCursor::before(horizon));
    };
    let statement = client.prepare_cached(FIRST_POSITION_SINCE).await?;
    let first: Option<i64> = client
        .query_opt(
            &statement,
            &[&endpoint_id, &uuid_v7_floor(since_ms), &since_ms],
        )
        .await?
        .map(|row| row.try_get(0))
        .transpose()?;
    // A transaction still open may hold an event received after `since_ms`
    // with a place below every visible one; it is at or above the horizon.
    Ok(StreamCursor::before(
        first.map_or(horizon, |f| f.min(horizon)),
    ))
}

/// Up to `limit` events of the endpoint after `after` and below the
/// horizon, in stream order.
pub(super) async fn after(
    client: &Client,
    endpoint_id: &str,
    after: &StreamCursor,
    limit: usize,
) -> Result<Vec<StreamedEvent>, PgError> {
    let horizon = horizon(client).await?;
    let statement = client.prepare_cached(EVENTS_AFTER).await?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = client
        .query(
            &statement,
            &[
                &endpoint_id,
                &after.position,
                &after.inbox_id,
                &horizon,
                &limit,
            ],
        )
        .await?;
    rows.iter()
        .map(|row| {
            Ok(StreamedEvent {
                cursor: StreamCursor {
                    position: row.try_get(0)?,
                    inbox_id: row.try_get(1)?,
                },
                provider: row.try_get(2)?,
                provider_event_id: row.try_get(3)?,
                event_type: row.try_get(4)?,
                received_at_ms: row.try_get(5)?,
                content_type: row.try_get(6)?,
            })
        })
        .collect()
}
