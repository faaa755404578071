//! Samples every configured target's state (pause, circuit) from the
//! database into `hookinbox_target_state` every `metrics.sample_interval`
//! (docs/operations.md). One primary-key-ordered read of the small
//! `target_gate` table. A failed read leaves the gauge as it was and is
//! logged.

use std::sync::Arc;

use hookinbox_store::StoreReads;
use tokio::sync::watch;

use crate::config::Settings;
use crate::delivery::target_states::{configured_targets, TargetStates};
use crate::periodic::{spawn_every, FirstRun};
use crate::telemetry::TargetStatesSampled;

/// Starts the sampler; it stops when `stopping` turns true.
pub fn spawn(reads: Arc<dyn StoreReads>, settings: &Settings, stopping: watch::Receiver<bool>) {
    let configured = Arc::new(configured_targets(settings));
    spawn_every(
        settings.metrics.sample_interval,
        FirstRun::Now,
        stopping,
        move || {
            let (reads, configured) = (Arc::clone(&reads), Arc::clone(&configured));
            async move {
                match TargetStates::read_for(&configured, reads.as_ref()).await {
                    Ok(states) => TargetStatesSampled { states: &states }.emit(),
                    Err(error) => tracing::warn!(
                        message = "Could not read the targets' states.",
                        %error
                    ),
                }
            }
        },
    );
}
