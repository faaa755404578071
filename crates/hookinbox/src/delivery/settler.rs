//! Records the outcomes of one target's attempts, many per write.
//!
//! An attempt hands its settlement here and frees its concurrency slot at
//! once, so the next delivery does not wait for this one's commit. The
//! settler writes whatever has queued up while the previous write was
//! committing, in one `Store::settle_many`: under load one write (one
//! savepoint) covers many deliveries instead of one each.
//!
//! Nothing about delivery changes: a row stays LEASED until its settlement
//! commits, so it is not leased twice and its object's next version waits;
//! a crash before the commit leaves a lease that expires and is delivered
//! again with the same idempotency key (at-least-once). The queue is
//! bounded by the target's concurrency, so attempts wait (holding their
//! slot) when settling falls behind, rather than piling up leased rows.

use std::sync::Arc;

use hookinbox_store::{SettleRequest, Store};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::target::Target;

/// Most settlements in one write.
const MAX_PER_WRITE: usize = 256;

/// Starts the settler of `target`. It stops once every sender is dropped
/// and everything queued is recorded.
pub fn spawn(
    store: Arc<dyn Store>,
    target: Arc<Target>,
) -> (mpsc::Sender<SettleRequest>, JoinHandle<()>) {
    let (queue, requests) = mpsc::channel(target.concurrency.max(1));
    (queue, tokio::spawn(run(store, target, requests)))
}

async fn run(
    store: Arc<dyn Store>,
    target: Arc<Target>,
    mut requests: mpsc::Receiver<SettleRequest>,
) {
    let mut batch = Vec::with_capacity(MAX_PER_WRITE);
    while requests.recv_many(&mut batch, MAX_PER_WRITE).await > 0 {
        let batch = std::mem::take(&mut batch);
        // Settling an ordered delivery may let its object's next version go.
        let frees_an_object = batch.iter().any(|request| request.lease.ordered);
        let deliveries: Vec<i64> = batch.iter().map(|r| r.lease.delivery_id).collect();
        match store.settle_many(batch).await {
            Ok(settled) => {
                for (delivery, recorded) in deliveries.into_iter().zip(settled) {
                    if !recorded {
                        tracing::warn!(
                            message =
                                "Lease was lost before settling; the delivery will be retried.",
                            delivery
                        );
                    }
                }
            }
            Err(error) => tracing::error!(
                message = "Could not record delivery outcomes; their leases will expire and they will be retried.",
                target = %target.name,
                deliveries = deliveries.len(),
                %error
            ),
        }
        if frees_an_object {
            target.wakeup.notify_one();
        }
    }
}
