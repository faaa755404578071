//! The background pass of `serve`: every `reconcile.interval`, one pass
//! with repairs, counted in metrics (`telemetry::reconcile_events`). Only
//! `serve` runs it, as only `serve` purges: one place for its log lines.
//! Several `serve` processes on one PostgreSQL reconciling at once is safe:
//! every repair is guarded, and a fetched event is stored once by the
//! UNIQUE key whoever stores it.

use std::sync::Arc;

use tokio::sync::watch;

use super::Reconciler;
use crate::clock;
use crate::telemetry::{ReconcileFailed, Reconciled};

/// Starts the task; it stops when `stopping` turns true. The first pass
/// runs one interval after start-up, not at once: a restart is not a
/// reason to list a provider's events again.
pub fn spawn(
    reconciler: Reconciler,
    interval: std::time::Duration,
    mut stopping: watch::Receiver<bool>,
) {
    let reconciler = Arc::new(reconciler);
    tokio::spawn(async move {
        let start = tokio::time::Instant::now() + interval;
        let mut ticks = tokio::time::interval_at(start, interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                _ = stopping.changed() => return,
            }
            match reconciler.run(true, clock::unix_millis(), |_| {}).await {
                Ok(report) => Reconciled(report.counts()).emit(),
                Err(error) => ReconcileFailed { error: &error }.emit(),
            }
        }
    });
}
