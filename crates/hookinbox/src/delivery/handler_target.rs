//! The `handler` target: for programs that embed hookinbox, business logic
//! run by the delivery workers instead of an HTTP POST.
//!
//! The workers lease the delivery as for any target (retries, backoff, dead
//! letters, per-object ordering, replay all apply), then hand it to
//! `SqliteStore::deliver_to_handler`, which runs the handler in the same
//! transaction that records the delivery DELIVERED. The business change and
//! the marker commit together or not at all, so an event changes business
//! state exactly once however many attempts, crashes or expired leases it
//! goes through. A replay is a deliberate new delivery: it runs the handler
//! again, with the same inbox id.
//!
//! Unlike `SqliteStore::accept_and_handle` (the handler inside the accept
//! transaction), a slow or failing handler never delays or refuses the
//! provider's request: the event is acknowledged first and retried here.

use std::collections::HashMap;
use std::sync::Arc;

use hookinbox_store::{
    HandlerDelivery, LeasedDelivery, SqliteHandler, SqliteStore, StoreError, StoredEvent,
};

use super::retry_policy::AttemptOutcome;

/// Handlers by target name, as the embedding program registers them; a
/// `kind = "handler"` target named `ledger` runs the handler registered as
/// `ledger` (for every endpoint that has such a target). Given to
/// [`Service::handlers`](crate::Service::handlers).
///
/// Each delivery runs its handler in the transaction that records it
/// DELIVERED: the change and the marker commit together or not at all, so
/// an event changes the program's state exactly once, whatever crashes,
/// retries or expired leases it goes through; a handler error is a failed
/// attempt, retried with the target's backoff.
#[derive(Clone, Default)]
pub struct HandlerRegistry {
    handlers: HashMap<String, Arc<dyn SqliteHandler>>,
}

impl HandlerRegistry {
    /// No handlers (what the stock binary runs with).
    pub fn new() -> HandlerRegistry {
        HandlerRegistry::default()
    }

    /// Registers `handler` for the targets named `target_name`.
    pub fn register(
        mut self,
        target_name: impl Into<String>,
        handler: Arc<dyn SqliteHandler>,
    ) -> HandlerRegistry {
        self.handlers.insert(target_name.into(), handler);
        self
    }

    pub(crate) fn get(&self, target_name: &str) -> Option<Arc<dyn SqliteHandler>> {
        self.handlers.get(target_name).cloned()
    }
}

/// A handler target's handler with the store it commits through.
#[derive(Clone)]
pub struct BoundHandler {
    pub store: Arc<SqliteStore>,
    pub handler: Arc<dyn SqliteHandler>,
}

/// How one attempt ended, for the worker.
#[derive(Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// To be recorded by the settler through the retry policy: every HTTP
    /// attempt, and a handler attempt that did not apply.
    ToSettle(AttemptOutcome),
    /// A handler applied its change and DELIVERED in one commit.
    Committed,
    /// The lease had been reclaimed before the handler ran; the current
    /// holder delivers it.
    LeaseLost,
}

impl From<AttemptOutcome> for AttemptResult {
    /// An outcome still to be settled.
    fn from(outcome: AttemptOutcome) -> AttemptResult {
        AttemptResult::ToSettle(outcome)
    }
}

/// Longest handler error kept in `last_error`.
const MAX_ERROR_CHARS: usize = 200;

impl BoundHandler {
    pub async fn deliver(
        &self,
        lease: &LeasedDelivery,
        event: StoredEvent,
        now_ms: i64,
    ) -> AttemptResult {
        let outcome = self
            .store
            .deliver_to_handler(lease.clone(), event, Arc::clone(&self.handler), now_ms)
            .await;
        match outcome {
            Ok(HandlerDelivery::Applied) => AttemptResult::Committed,
            Ok(HandlerDelivery::LeaseLost) => AttemptResult::LeaseLost,
            Err(StoreError::Handler(error)) => AttemptResult::ToSettle(AttemptOutcome::Transient {
                error: error.chars().take(MAX_ERROR_CHARS).collect(),
                retry_after_ms: None,
            }),
            Err(error) => AttemptResult::ToSettle(AttemptOutcome::Transient {
                error: format!("could not commit the handler's change: {error}"),
                retry_after_ms: None,
            }),
        }
    }
}
