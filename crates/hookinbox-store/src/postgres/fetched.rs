//! Events a reconciliation source fetched from the provider's API: accepted
//! in a transaction of their own (not through the ingress batcher: a
//! reconciliation pass stores a few at a time, and each must be marked),
//! the same statement ingress runs (`accept_batch`), and marked as fetched
//! when new.

use std::collections::HashSet;

use deadpool_postgres::{GenericClient, Transaction};

use super::accept::accept_batch;
use super::db_error::PgError;
use crate::prepared_event::PreparedEvent;
use crate::AcceptOutcome;

pub(crate) async fn accept_fetched(
    tx: &Transaction<'_>,
    schema: &str,
    notify_channel: &str,
    prepared: &PreparedEvent,
    fetched_at_ms: i64,
) -> Result<AcceptOutcome, PgError> {
    let outcome = accept_batch(tx, schema, notify_channel, &[prepared])
        .await?
        .pop()
        .ok_or_else(|| PgError::Invariant("no outcome for the event".into()))?;
    Ok(match outcome {
        AcceptOutcome::Inserted { id } => {
            let mark = tx
                .prepare_cached("UPDATE inbox SET fetched_at_ms = $2 WHERE id = $1")
                .await?;
            tx.execute(&mark, &[&id, &fetched_at_ms]).await?;
            AcceptOutcome::Inserted { id }
        }
        // The stored row is this event as its webhook brought it: the API
        // renders the same event with other bytes.
        AcceptOutcome::Conflict { id } => AcceptOutcome::Duplicate { id },
        duplicate => duplicate,
    })
}

/// Which of `ids` the endpoint has: one statement over the unique key.
pub(crate) async fn known_event_ids(
    client: &impl GenericClient,
    endpoint_id: &str,
    ids: &[String],
) -> Result<HashSet<String>, PgError> {
    let statement = client
        .prepare_cached(
            "SELECT provider_event_id FROM inbox
             WHERE endpoint_id = $1 AND provider_event_id = ANY($2)",
        )
        .await?;
    Ok(client
        .query(&statement, &[&endpoint_id, &ids])
        .await?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()?)
}
