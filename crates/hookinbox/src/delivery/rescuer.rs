//! Returns expired leases to PENDING: a worker that crashed or stalled
//! loses its deliveries to the next one.

use std::sync::Arc;
use std::time::Duration;

use hookinbox_store::Store;
use tokio::sync::watch;

use super::liveness::Heartbeat;
use crate::clock;

pub async fn run(
    store: Arc<dyn Store>,
    interval: Duration,
    heartbeat: Heartbeat,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        heartbeat.beat();
        match store.reclaim_expired(clock::unix_millis()).await {
            Ok(0) => {}
            Ok(reclaimed) => crate::telemetry::LeasesReclaimed(reclaimed).emit(),
            Err(error) => tracing::warn!(message = "Could not reclaim leases.", %error),
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => return heartbeat.stopping(),
        }
    }
}
