//! Ingress batching: concurrent `accept` calls of this process go through a
//! channel to one task, which gathers what is waiting into a batch and
//! commits it in one transaction (`accept::accept_batch`) on a pooled
//! connection — one round trip and one WAL flush for many requests.
//!
//! Up to `accept_concurrency` batches are in flight at once; while they
//! commit, new requests gather into the next one, so the batch size follows
//! the load by itself. Every caller is answered only after the COMMIT of its
//! batch returned; if anything fails — the COMMIT included, whose outcome is
//! then unknown — every caller of the batch gets `Unavailable` (a retryable
//! 503, deduplicated when the provider sends it again). A NOTIFY on the
//! delivery channel goes out with the batch's commit when it inserted
//! deliveries (at most one per batch: it is part of the transaction).
//!
//! A caller that stopped waiting (its deadline passed) before its batch was
//! gathered is left out, as in the SQLite writer.

use std::sync::Arc;
use std::time::Instant;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot, Semaphore};

use super::accept::accept_batch;
use super::db_error::PgError;
use super::listen::NOTIFY;
use crate::prepared_event::PreparedEvent;
use crate::{AcceptOutcome, StoreError};

/// One `accept` waiting for its batch.
pub(crate) struct AcceptRequest {
    pub(crate) event: PreparedEvent,
    pub(crate) reply: oneshot::Sender<Result<AcceptOutcome, StoreError>>,
}

/// What the batcher needs to know.
pub(crate) struct Batcher {
    pub(crate) pool: Pool,
    pub(crate) schema: String,
    pub(crate) notify_channel: String,
    pub(crate) max_events: usize,
    pub(crate) max_bytes: usize,
    pub(crate) concurrency: usize,
}

impl Batcher {
    /// Runs until every sender is dropped; batches in flight then finish.
    pub(crate) async fn run(self, mut queue: mpsc::Receiver<AcceptRequest>) {
        let this = Arc::new(self);
        let slots = Arc::new(Semaphore::new(this.concurrency.max(1)));
        while let Some(first) = queue.recv().await {
            // Wait for a free slot before gathering: what arrives meanwhile
            // joins this batch.
            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                return;
            };
            let mut bytes = first.event.event.payload.len();
            let mut batch = vec![first];
            while batch.len() < this.max_events && bytes < this.max_bytes {
                match queue.try_recv() {
                    Ok(next) => {
                        bytes += next.event.event.payload.len();
                        batch.push(next);
                    }
                    Err(_) => break,
                }
            }
            skip_abandoned(&mut batch);
            if batch.is_empty() {
                continue;
            }
            let this = Arc::clone(&this);
            tokio::spawn(async move {
                this.commit(batch).await;
                drop(slot);
            });
        }
    }

    async fn commit(&self, batch: Vec<AcceptRequest>) {
        let started = Instant::now();
        let events: Vec<&PreparedEvent> = batch.iter().map(|request| &request.event).collect();
        let committed = self.commit_events(&events).await;
        metrics::histogram!("hookinbox_commit_duration_seconds")
            .record(started.elapsed().as_secs_f64());
        metrics::histogram!("hookinbox_commit_batch_ops").record(batch.len() as f64);
        match committed {
            Ok(outcomes) => {
                for (request, outcome) in batch.into_iter().zip(outcomes) {
                    // A caller that went away is fine: what was committed
                    // stays committed and a retry finds it.
                    let _ = request.reply.send(Ok(outcome));
                }
            }
            Err(error) => {
                tracing::error!(
                    message = "PostgreSQL batch commit failed; batch not acknowledged.",
                    %error,
                    ops = batch.len()
                );
                let error = Arc::new(error);
                for request in batch {
                    let _ = request
                        .reply
                        .send(Err(StoreError::unavailable(Arc::clone(&error))));
                }
            }
        }
    }

    async fn commit_events(
        &self,
        events: &[&PreparedEvent],
    ) -> Result<Vec<AcceptOutcome>, PgError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let outcomes = accept_batch(&tx, &self.schema, events).await?;
        let new_deliveries = events.iter().zip(&outcomes).any(|(prepared, outcome)| {
            matches!(outcome, AcceptOutcome::Inserted { .. }) && !prepared.event.targets.is_empty()
        });
        if new_deliveries {
            let notify = tx.prepare_cached(NOTIFY).await?;
            tx.execute(&notify, &[&self.notify_channel]).await?;
        }
        // Only an answered COMMIT is a commit: an error here (the
        // connection lost on the way) leaves the outcome unknown, and it is
        // reported as the failure it may be.
        tx.commit().await?;
        Ok(outcomes)
    }
}

/// Drops the requests whose callers stopped waiting.
fn skip_abandoned(batch: &mut Vec<AcceptRequest>) {
    let before = batch.len();
    batch.retain(|request| !request.reply.is_closed());
    let skipped = before - batch.len();
    if skipped > 0 {
        metrics::counter!("hookinbox_commit_abandoned_ops_total").increment(skipped as u64);
    }
}
