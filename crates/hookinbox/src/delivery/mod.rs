//! Delivery (DESIGN.md §5): workers lease due rows of the outbox and send
//! them to the user's targets, with retries, dead letters and per-object
//! ordering. Ingress never calls a target.

pub mod http_target;
pub mod rescuer;
pub mod retry_policy;
pub mod settler;
pub mod target;
pub mod tls;
pub mod worker;

use std::sync::Arc;
use std::time::Duration;

use hookinbox_store::Store;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::DeliveryConfig;
use crate::endpoint::Endpoints;
use worker::WorkerContext;

/// Starts one worker per target and the lease rescuer; they stop when
/// `shutdown` turns true.
pub fn spawn(
    store: Arc<dyn Store>,
    endpoints: &Endpoints,
    config: &DeliveryConfig,
    shutdown: watch::Receiver<bool>,
) -> JoinSet<()> {
    let context = WorkerContext {
        store: Arc::clone(&store),
        owner: format!("{}-{}", std::process::id(), uuid_like()),
        poll_interval: Duration::from_millis(config.poll_ms),
    };
    let mut tasks = JoinSet::new();
    for endpoint in endpoints.values() {
        for target in &endpoint.targets {
            tasks.spawn(worker::run(
                context.clone(),
                Arc::clone(target),
                shutdown.clone(),
            ));
        }
    }
    tasks.spawn(rescuer::run(
        store,
        Duration::from_millis(config.rescue_interval_ms),
        shutdown,
    ));
    tasks
}

fn uuid_like() -> String {
    use rand::Rng;
    format!("{:016x}", rand::thread_rng().gen::<u64>())
}
