//! The background pass of `serve`: every `reconcile.interval`, one pass
//! with repairs, counted in metrics (`telemetry::reconcile_events`). Only
//! `serve` runs it, as only `serve` purges: one place for its log lines.
//! Several `serve` processes on one PostgreSQL reconciling at once is safe:
//! every repair is guarded, and a fetched event is stored once by the
//! UNIQUE key whoever stores it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::Reconciler;
use crate::clock;
use crate::periodic::{spawn_every, FirstRun};
use crate::telemetry::{ReconcileFailed, Reconciled};

/// Starts the task; it stops when `stopping` turns true. The first pass
/// runs one interval after start-up, not at once: a restart is not a
/// reason to list a provider's events again.
pub fn spawn(reconciler: Reconciler, interval: Duration, stopping: watch::Receiver<bool>) {
    let reconciler = Arc::new(reconciler);
    spawn_every(interval, FirstRun::AfterOneInterval, stopping, move || {
        let reconciler = Arc::clone(&reconciler);
        async move {
            match reconciler.run(true, clock::unix_millis(), |_| {}).await {
                Ok(report) => Reconciled(report.counts()).emit(),
                Err(error) => ReconcileFailed { error: &error }.emit(),
            }
        }
    });
}
