//! The `handler` target: for programs that embed hookinbox, business logic
//! run by the delivery workers instead of an HTTP POST.
//!
//! The workers lease the delivery as for any target (retries, backoff, dead
//! letters, per-object ordering, replay all apply), then hand it to
//! the store's `deliver_to_handler`, which runs the handler in the same
//! transaction that records the delivery DELIVERED (on SQLite with its
//! connection, on PostgreSQL with the open `tokio_postgres` transaction). The business change and
//! the marker commit together or not at all, so an event changes business
//! state exactly once however many attempts, crashes or expired leases it
//! goes through. A replay is a deliberate new delivery: it runs the handler
//! again, with the same inbox id.
//!
//! Unlike the stores' `accept_and_handle` (the handler inside the accept
//! transaction), a failing handler never refuses the provider's request:
//! the event is acknowledged first and retried here. On SQLite a slow one
//! still delays it — the handler runs on the store's one writer thread, so
//! no other commit happens while it runs — which is why SQLite handlers
//! must be short (docs/delivery.md, "Embedding").

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use hookinbox_store::{
    AnyStore, HandlerDelivery, LeasedDelivery, PostgresHandler, PostgresStore, SqliteHandler,
    SqliteStore, StoreError, StoredEvent,
};

use super::destination::{AttemptResult, Destination};
use super::retry_policy::AttemptOutcome;
use crate::clock;

/// Handlers by target name, as the embedding program registers them; a
/// `kind = "handler"` target named `ledger` runs the handler registered as
/// `ledger` (for every endpoint that has such a target). Given to
/// [`Service::handlers`](crate::Service::handlers).
///
/// A handler receives its backend's own open transaction, so it is
/// registered per backend: [`register`](HandlerRegistry::register) for
/// SQLite, [`register_postgres`](HandlerRegistry::register_postgres) for
/// PostgreSQL (a program that runs on both registers both under the same
/// name). The service refuses to start when a handler target has none for
/// the configured backend.
///
/// Each delivery runs its handler in the transaction that records it
/// DELIVERED: the change and the marker commit together or not at all, so
/// an event changes the program's state exactly once, whatever crashes,
/// retries or expired leases it goes through; a handler error is a failed
/// attempt, retried with the target's backoff.
#[derive(Clone, Default)]
pub struct HandlerRegistry {
    sqlite: HashMap<String, Arc<dyn SqliteHandler>>,
    postgres: HashMap<String, Arc<dyn PostgresHandler>>,
}

impl HandlerRegistry {
    /// No handlers (what the stock binary runs with).
    pub fn new() -> HandlerRegistry {
        HandlerRegistry::default()
    }

    /// Registers `handler` for the targets named `target_name`, on SQLite.
    pub fn register(
        mut self,
        target_name: impl Into<String>,
        handler: Arc<dyn SqliteHandler>,
    ) -> HandlerRegistry {
        self.sqlite.insert(target_name.into(), handler);
        self
    }

    /// Registers `handler` for the targets named `target_name`, on
    /// PostgreSQL.
    pub fn register_postgres(
        mut self,
        target_name: impl Into<String>,
        handler: Arc<dyn PostgresHandler>,
    ) -> HandlerRegistry {
        self.postgres.insert(target_name.into(), handler);
        self
    }

    /// The handler for `target_name` bound to `store`'s backend; `None`
    /// when none was registered for that backend.
    pub(crate) fn bind(&self, target_name: &str, store: &AnyStore) -> Option<BoundHandler> {
        match store {
            AnyStore::Sqlite(store) => {
                self.sqlite
                    .get(target_name)
                    .map(|handler| BoundHandler::Sqlite {
                        store: Arc::clone(store),
                        handler: Arc::clone(handler),
                    })
            }
            AnyStore::Postgres(store) => {
                self.postgres
                    .get(target_name)
                    .map(|handler| BoundHandler::Postgres {
                        store: Arc::clone(store),
                        handler: Arc::clone(handler),
                    })
            }
        }
    }
}

/// A handler target's handler with the store it commits through.
#[derive(Clone)]
pub enum BoundHandler {
    Sqlite {
        store: Arc<SqliteStore>,
        handler: Arc<dyn SqliteHandler>,
    },
    Postgres {
        store: Arc<PostgresStore>,
        handler: Arc<dyn PostgresHandler>,
    },
}

/// Longest handler error kept in `last_error`.
const MAX_ERROR_CHARS: usize = 200;

impl std::fmt::Debug for BoundHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backend = match self {
            BoundHandler::Sqlite { .. } => "sqlite",
            BoundHandler::Postgres { .. } => "postgres",
        };
        f.debug_struct("BoundHandler")
            .field("backend", &backend)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Destination for BoundHandler {
    /// Runs the handler in the transaction that records the delivery
    /// DELIVERED; a handler error is a transient failure.
    async fn attempt(&self, lease: &LeasedDelivery, event: StoredEvent) -> AttemptResult {
        let now_ms = clock::unix_millis();
        let outcome = match self {
            BoundHandler::Sqlite { store, handler } => {
                store
                    .deliver_to_handler(lease.clone(), event, Arc::clone(handler), now_ms)
                    .await
            }
            BoundHandler::Postgres { store, handler } => {
                store
                    .deliver_to_handler(lease.clone(), event, handler.as_ref(), now_ms)
                    .await
            }
        };
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
