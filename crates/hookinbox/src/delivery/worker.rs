//! The worker of one target: leases due deliveries up to the target's
//! concurrency, sends each, heartbeats the lease while the attempt runs, and
//! settles the outcome through the retry policy (recorded by the target's
//! settler, many per write). Delivery to an HTTP target is at-least-once: a
//! crash between the target's answer and the settlement leaves a lease that
//! expires and is taken again, with the same idempotency key. A NATS target
//! publishes again with the same `Nats-Msg-Id`, which JetStream drops as a
//! duplicate inside the stream's duplicate window. A handler
//! target commits its change with the DELIVERED marker (`handler_target`),
//! so its attempts apply exactly once.
//!
//! An event that cannot be read from our own storage is not attempted:
//! the delivery is deferred, without spending an attempt of the target's
//! budget, and the fault is counted, logged and shown by `/readyz`
//! (`storage_faults`; docs/architecture.md §5).

use std::sync::Arc;
use std::time::Duration;

use hookinbox_store::{
    AttemptVerdict, LeaseParams, LeasedDelivery, LeasedEvent, SettleRequest, Settlement, Store,
    StoreError, StoredEvent,
};
use rand::Rng;
use tokio::sync::{watch, Semaphore};

use super::destination::{AttemptResult, Destination};
use super::liveness::Heartbeat;
use super::reshape::Reshaped;
use super::retry_policy::storage_fault_retry_at;
use super::retry_policy::AttemptOutcome;
use super::settler;
use super::storage_faults::StorageFaults;
use super::target::Target;
use crate::clock;
use crate::failpoint::Failpoint;
use crate::telemetry::{DeliveredEndToEnd, DeliveryOutcome};
use crate::traces::DeliverySpan;

/// What every worker of a process shares.
#[derive(Clone)]
pub struct WorkerContext {
    pub store: Arc<dyn Store>,
    /// This process's lease owner name.
    pub owner: String,
    /// Fallback poll when no wake-up arrives (another process may have accepted).
    pub poll_interval: Duration,
    /// Where events that could not be read are recorded (`/readyz`).
    pub storage_faults: Arc<StorageFaults>,
}

/// Runs until `shutdown` turns true; then stops leasing, lets in-flight
/// attempts finish and waits until their outcomes are recorded. Each
/// attempt goes to `destination`, the target's kind made ready (a handler
/// target's handler already bound to its store). `heartbeat` beats at
/// every turn of the loop (`/readyz`'s `workers`).
pub async fn run(
    context: WorkerContext,
    target: Arc<Target>,
    destination: Arc<dyn Destination>,
    heartbeat: Heartbeat,
    mut shutdown: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(target.concurrency));
    let (settlements, settler) = settler::spawn(Arc::clone(&context.store), Arc::clone(&target));
    loop {
        heartbeat.beat();
        if *shutdown.borrow() {
            break;
        }
        let free = slots.available_permits();
        let batch = lease_batch(target.concurrency);
        if free < batch {
            // Enough attempts are in flight to keep the target busy while
            // more slots free up: one lease for `batch` deliveries costs
            // the database about what one for a single delivery does.
            tokio::select! {
                permits = Arc::clone(&slots).acquire_many_owned(batch as u32) => drop(permits),
                _ = shutdown.changed() => {}
            }
            continue;
        }
        let params = LeaseParams {
            endpoint_id: target.endpoint_id.clone(),
            target: target.name.clone(),
            owner: context.owner.clone(),
            max: free,
            now_ms: clock::unix_millis(),
            lease_ms: target.lease.as_millis() as i64,
            gate: target.flow.gate_policy(),
        };
        let leased = match context.store.lease_events(params).await {
            Ok(leased) => leased,
            Err(error) => {
                tracing::warn!(message = "Could not lease deliveries.", target = %target.name, %error);
                Vec::new()
            }
        };
        if leased.is_empty() {
            tokio::select! {
                () = target.wakeup.notified() => {}
                () = tokio::time::sleep(context.poll_interval) => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        for LeasedEvent { lease, event } in leased {
            let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
                return;
            };
            let (context, target) = (context.clone(), Arc::clone(&target));
            let (settlements, destination) = (settlements.clone(), Arc::clone(&destination));
            tokio::spawn(async move {
                // None: a handler already recorded the outcome.
                if let Some(request) =
                    attempt(&context, &target, destination.as_ref(), lease, event).await
                {
                    // The slot is freed once the outcome is queued, not once
                    // it is committed; the bounded queue holds the slot when
                    // settling falls behind.
                    if settlements.send(request).await.is_err() {
                        tracing::error!(message = "The settler stopped; the lease will expire and the delivery will be retried.");
                    }
                }
                drop(permit);
            });
        }
    }
    heartbeat.stopping();
    // Wait for in-flight attempts (every permit back), then for the settler
    // to record what they queued.
    let _ = slots.acquire_many(target.concurrency as u32).await;
    drop(settlements);
    let _ = settler.await;
}

/// The fewest free slots a worker leases for: a quarter of the target's
/// concurrency (one slot up to 7). Below it, the worker waits for more
/// attempts to end first; a worker with fewer slots in use than that
/// leases at once, so a quiet target's latency is unchanged.
fn lease_batch(concurrency: usize) -> usize {
    (concurrency / 4).max(1)
}

/// Extends `lease` every third of the target's lease until the attempt it
/// runs beside ends (and drops it); never returns.
async fn heartbeat_until_dropped(
    context: &WorkerContext,
    target: &Target,
    lease: &LeasedDelivery,
) -> std::convert::Infallible {
    let beat = target.lease / 3;
    loop {
        tokio::time::sleep(beat).await;
        let until = clock::unix_millis() + target.lease.as_millis() as i64;
        match context.store.heartbeat(lease, until).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                message = "Lease lost during an attempt; another worker may deliver it too.",
                delivery = lease.delivery_id
            ),
            Err(error) => tracing::warn!(message = "Heartbeat failed.", %error),
        }
    }
}

/// One attempt of one leased delivery at its event (read with the lease),
/// heartbeating while it runs; returns its settlement for the settler, or
/// None when a handler target already committed it (or found its lease
/// taken over).
async fn attempt(
    context: &WorkerContext,
    target: &Target,
    destination: &dyn Destination,
    lease: LeasedDelivery,
    event: Result<Option<StoredEvent>, StoreError>,
) -> Option<SettleRequest> {
    let started = std::time::Instant::now();
    // When the event arrived: for the end-to-end latency.
    let event = match event {
        Ok(event) => event,
        Err(error) => return Some(deferred(context, lease, &error, started)),
    };
    let received_at_ms = event.as_ref().map(|event| event.received_at_ms);
    let trace_parent = event
        .as_ref()
        .and_then(|event| event.trace_parent.as_deref());
    let span = DeliverySpan::start(&lease, trace_parent);
    let send = span.scope(async {
        let Some(event) = event else {
            return AttemptOutcome::Permanent {
                error: "the event is missing from the inbox".into(),
            }
            .into();
        };
        if event.payload.is_none() {
            return AttemptOutcome::Permanent {
                error: "the raw payload was purged by retention".into(),
            }
            .into();
        }
        match target.reshape.apply(event).await {
            Reshaped::Send { event, overrides } => {
                destination.attempt_with(&lease, *event, &overrides).await
            }
            Reshaped::Cancel => AttemptOutcome::Cancelled.into(),
            Reshaped::Failed(error) => AttemptOutcome::Permanent { error }.into(),
        }
    });
    // The heartbeats run beside the attempt, never instead of it: a handler
    // attempt on PostgreSQL holds the delivery's row lock in its open
    // transaction, and a heartbeat awaited while the attempt is not polled
    // would wait for that lock forever (the transaction could never commit).
    let heartbeats = heartbeat_until_dropped(context, target, &lease);
    let outcome = {
        tokio::pin!(send, heartbeats);
        tokio::select! {
            outcome = &mut send => outcome,
            never = &mut heartbeats => match never {},
        }
    };
    let outcome = match outcome {
        AttemptResult::ToSettle(outcome) => outcome,
        AttemptResult::Committed => {
            span.end("delivered", None);
            count_in_breaker(context, target, AttemptVerdict::Answered).await;
            let now_ms = clock::unix_millis();
            DeliveryOutcome {
                lease: &lease,
                settlement: &Settlement::Delivered,
                now_ms,
                elapsed: started.elapsed(),
            }
            .emit();
            delivered_end_to_end(&lease, received_at_ms, now_ms);
            return None;
        }
        AttemptResult::LeaseLost => {
            span.end("lease_lost", None);
            tracing::warn!(
                message =
                    "Lease lost before the handler ran; the delivery's current holder applies it.",
                delivery = lease.delivery_id
            );
            return None;
        }
    };
    match &outcome {
        AttemptOutcome::Delivered => span.end("delivered", None),
        AttemptOutcome::Transient { error, .. } => span.end("transient", Some(error)),
        AttemptOutcome::Permanent { error } => span.end("permanent", Some(error)),
        AttemptOutcome::Cancelled => span.end("cancelled", None),
    }
    if outcome == AttemptOutcome::Delivered {
        Failpoint::AfterTargetAcceptedBeforeSettle.hit();
    }
    // Before the settlement frees the slot: the next lease sees an opened
    // circuit.
    // A cancelled delivery never reached the target: it says nothing about
    // the target's health (a half-open probe's lease simply runs out).
    let verdict = match &outcome {
        AttemptOutcome::Transient { .. } => Some(AttemptVerdict::TransientFailure),
        AttemptOutcome::Delivered | AttemptOutcome::Permanent { .. } => {
            Some(AttemptVerdict::Answered)
        }
        AttemptOutcome::Cancelled => None,
    };
    if let Some(verdict) = verdict {
        count_in_breaker(context, target, verdict).await;
    }
    let now_ms = clock::unix_millis();
    let jitter: f64 = rand::rng().random();
    let settlement =
        target
            .policy
            .settle(lease.attempts, lease.created_at_ms, now_ms, outcome, jitter);
    DeliveryOutcome {
        lease: &lease,
        settlement: &settlement,
        now_ms,
        elapsed: started.elapsed(),
    }
    .emit();
    if settlement == Settlement::Delivered {
        delivered_end_to_end(&lease, received_at_ms, now_ms);
    }
    Some(SettleRequest {
        lease,
        settlement,
        now_ms,
    })
}

/// Counts an attempt's outcome in the target's circuit breaker, when it
/// has one (state in the database, shared by every process), and logs the
/// circuit's move. A failure to record is logged and costs nothing else:
/// the breaker is a brake, not a correctness guard.
async fn count_in_breaker(context: &WorkerContext, target: &Target, verdict: AttemptVerdict) {
    let Some(breaker) = target.flow.gate_policy().circuit_breaker else {
        return;
    };
    let Some(gates) = Arc::clone(&context.store).target_gates() else {
        return;
    };
    let now_ms = clock::unix_millis();
    match gates
        .record_attempt(&target.endpoint_id, &target.name, breaker, verdict, now_ms)
        .await
    {
        Ok(Some(transition)) => transition.log(&target.endpoint_id, &target.name),
        Ok(None) => {}
        Err(error) => {
            tracing::warn!(message = "Could not count an attempt in the circuit breaker.", target = %target.name, %error)
        }
    }
}

/// The settlement of a delivery whose event could not be read from our
/// own storage (`error`): deferred, so the target's budget is not charged
/// for our fault, and recorded for `/readyz`.
fn deferred(
    context: &WorkerContext,
    lease: LeasedDelivery,
    error: &StoreError,
    started: std::time::Instant,
) -> SettleRequest {
    let now_ms = clock::unix_millis();
    context.storage_faults.record(now_ms);
    let jitter: f64 = rand::rng().random();
    let settlement = Settlement::Deferred {
        next_attempt_at_ms: storage_fault_retry_at(now_ms, jitter),
        error: format!("storage fault: {error}"),
    };
    DeliveryOutcome {
        lease: &lease,
        settlement: &settlement,
        now_ms,
        elapsed: started.elapsed(),
    }
    .emit();
    SettleRequest {
        lease,
        settlement,
        now_ms,
    }
}

/// Records the receive-to-delivered latency of a delivered attempt.
fn delivered_end_to_end(lease: &LeasedDelivery, received_at_ms: Option<i64>, now_ms: i64) {
    if let Some(received_at_ms) = received_at_ms {
        DeliveredEndToEnd {
            endpoint: &lease.endpoint_id,
            target: &lease.target,
            received_at_ms,
            delivered_at_ms: now_ms,
        }
        .emit();
    }
}

#[cfg(test)]
mod tests {
    use super::lease_batch;

    #[test]
    fn a_lease_waits_for_a_quarter_of_the_slots_and_never_for_more_than_one_below_eight() {
        assert_eq!(lease_batch(1), 1);
        assert_eq!(lease_batch(7), 1);
        assert_eq!(lease_batch(8), 2);
        assert_eq!(lease_batch(64), 16);
    }
}
