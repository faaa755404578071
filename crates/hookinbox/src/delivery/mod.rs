//! Delivery (docs/architecture.md §5): workers lease due rows of the outbox and send
//! them to the user's targets, with retries, dead letters and per-object
//! ordering. Ingress never calls a target.

pub mod broker_headers;
pub mod connect_failure;
pub mod destination;
pub mod handler_target;
pub mod http_target;
pub mod liveness;
pub mod mqtt_target;
pub mod nats_target;
pub mod rabbitmq_target;
pub mod redis_stream_target;
pub mod rescuer;
pub mod reshape;
pub mod retry_policy;
pub mod settler;
pub mod storage_faults;
pub mod target;
pub mod target_states;
pub mod worker;

use std::sync::Arc;

use hookinbox_store::{AnyStore, Store};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config;
use crate::endpoint::Endpoints;
use crate::error::Error;
use destination::Destination;
pub use handler_target::HandlerRegistry;
use liveness::Liveness;
use target::Sender;
use worker::WorkerContext;

/// Starts one worker per target and the lease rescuer; they stop when
/// `shutdown` turns true. Every `handler` target must have a handler in
/// `handlers` for the backend of `handler_store`, and runs it in that
/// store's transactions: the configured store (`None` when the embedder
/// gave a store of its own). Each task beats in `liveness` (`/readyz`).
pub fn spawn(
    store: Arc<dyn Store>,
    handler_store: Option<&AnyStore>,
    endpoints: &Endpoints,
    settings: &config::Delivery,
    handlers: &HandlerRegistry,
    liveness: &Liveness,
    shutdown: watch::Receiver<bool>,
) -> Result<JoinSet<()>, Error> {
    let mut bound = Vec::new();
    for endpoint in endpoints.values() {
        for target in &endpoint.targets {
            let destination: Arc<dyn Destination> = match &target.sender {
                Sender::Ready(destination) => Arc::clone(destination),
                Sender::Handler => {
                    let store =
                        handler_store.ok_or_else(|| Error::HandlerNeedsConfiguredStore {
                            endpoint: target.endpoint_id.clone(),
                            target: target.name.clone(),
                        })?;
                    let handler = handlers.bind(&target.name, store).ok_or_else(|| {
                        Error::HandlerMissing {
                            endpoint: target.endpoint_id.clone(),
                            target: target.name.clone(),
                            backend: store.backend(),
                        }
                    })?;
                    Arc::new(handler)
                }
            };
            bound.push((Arc::clone(target), destination));
        }
    }
    let context = WorkerContext {
        store: Arc::clone(&store),
        owner: format!("{}-{}", std::process::id(), uuid::Uuid::now_v7()),
        poll_interval: settings.poll_interval,
        storage_faults: liveness.storage_faults(),
    };
    let mut tasks = JoinSet::new();
    for (target, destination) in bound {
        let heartbeat = liveness.register(
            format!("worker {}/{}", target.endpoint_id, target.name),
            target.lease.max(settings.poll_interval),
        );
        tasks.spawn(worker::run(
            context.clone(),
            target,
            destination,
            heartbeat,
            shutdown.clone(),
        ));
    }
    let heartbeat = liveness.register("lease rescuer", settings.rescue_interval);
    tasks.spawn(rescuer::run(
        store,
        settings.rescue_interval,
        heartbeat,
        shutdown,
    ));
    Ok(tasks)
}
