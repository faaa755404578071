//! The library handler on PostgreSQL: the handler's business change commits
//! in the same transaction as the event's record (`accept_and_handle`) or
//! as DELIVERED (`deliver_to_handler`), through the handler's own use of
//! the tokio-postgres transaction it is given.
//!
//! `accept_and_handle` does not go through the ingress batcher: a handler
//! that fails must roll back its own event only, so each such event has a
//! transaction of its own (the batcher's many-events transaction would
//! need a savepoint per event, and the handler would hold the batch up).

use deadpool_postgres::Transaction;

use super::accept::accept_batch;
use super::db_error::PgError;
use super::outbox;
use crate::prepared_event::PreparedEvent;
use crate::{
    AcceptOutcome, HandledEvent, HandlerDelivery, HandlerError, LeasedDelivery, PostgresHandler,
    SettleRequest, Settlement, StoredEvent,
};

/// Why a handler's transaction did not commit.
pub(crate) enum HandlerTxError {
    Db(PgError),
    Handler(HandlerError),
}

impl<E: Into<PgError>> From<E> for HandlerTxError {
    fn from(error: E) -> Self {
        HandlerTxError::Db(error.into())
    }
}

impl HandlerTxError {
    pub(crate) fn into_store_error(self) -> crate::StoreError {
        match self {
            HandlerTxError::Db(error) => error.into(),
            HandlerTxError::Handler(error) => crate::StoreError::Handler(error.to_string()),
        }
    }
}

/// Accepts `prepared` and, when it is new, applies `handler` and marks the
/// event PROCESSED — all inside `tx`, which the caller commits.
pub(crate) async fn accept_and_handle(
    tx: &Transaction<'_>,
    schema: &str,
    notify_channel: &str,
    prepared: &PreparedEvent,
    handler: &dyn PostgresHandler,
) -> Result<AcceptOutcome, HandlerTxError> {
    let outcome = accept_batch(tx, schema, notify_channel, &[prepared])
        .await?
        .pop()
        .ok_or_else(|| PgError::Invariant("no outcome for the event".into()))?;
    if let AcceptOutcome::Inserted { id } = &outcome {
        let event = &prepared.event;
        let handled = HandledEvent {
            inbox_id: id,
            endpoint_id: &event.endpoint_id,
            provider_event_id: &event.provider_event_id,
            event_type: event.event_type.as_deref(),
            payload: &event.payload,
        };
        handler
            .handle(tx, &handled)
            .await
            .map_err(HandlerTxError::Handler)?;
        tx.execute(
            "UPDATE inbox SET status = 'PROCESSED' WHERE id = $1 AND status = 'ACCEPTED'",
            &[id],
        )
        .await?;
    }
    Ok(outcome)
}

/// Settles `lease` DELIVERED (guarded on the lease) and applies `handler`,
/// inside `tx`, which the caller commits when this answers `Applied`.
pub(crate) async fn deliver(
    tx: &Transaction<'_>,
    lease: LeasedDelivery,
    event: &StoredEvent,
    handler: &dyn PostgresHandler,
    now_ms: i64,
) -> Result<HandlerDelivery, HandlerTxError> {
    let request = SettleRequest {
        lease,
        settlement: Settlement::Delivered,
        now_ms,
    };
    let settled = outbox::settle_many(tx, &[request]).await?;
    if settled.first() != Some(&true) {
        return Ok(HandlerDelivery::LeaseLost);
    }
    let handled = HandledEvent {
        inbox_id: &event.id,
        endpoint_id: &event.endpoint_id,
        provider_event_id: &event.provider_event_id,
        event_type: event.event_type.as_deref(),
        payload: event.payload.as_deref().unwrap_or_default(),
    };
    handler
        .handle(tx, &handled)
        .await
        .map_err(HandlerTxError::Handler)?;
    Ok(HandlerDelivery::Applied)
}
