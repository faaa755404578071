//! The gauges only the database knows, sampled by `serve` into `/metrics`
//! (docs/architecture.md §7): the oldest unprocessed event per endpoint, open
//! deliveries and the oldest due one per target, and the inbox by status.
//!
//! Two periods, because the reads cost differently. Every
//! `metrics.sample_interval` the backlog is read: index range scans whose
//! cost follows the rows still to do (ACCEPTED events, open deliveries)
//! and the FAILED ones, not the inbox, so a sample stays within a few
//! milliseconds with a million processed rows. Every
//! `metrics.count_interval` the PROCESSED rows are counted too: a count
//! over all of them (0.1–0.2 s per million, bench/RESULTS.md 0c; on the reader's
//! connection), which the short period would repeat for nothing.
//!
//! A failed read leaves the gauges as they were and is logged once until
//! a read succeeds again (storage trouble shows in `/readyz` and the
//! ingress counters already).

use std::sync::Arc;
use std::time::{Duration, Instant};

use hookinbox_store::{BacklogCounts, InboxStatus, StoreError, TargetRef};
use tokio::sync::{watch, Mutex};

use crate::clock;
use crate::config::Settings;
use crate::periodic::{spawn_every, FirstRun};
use crate::telemetry::{BacklogSampled, InboxRowsCounted, LogLinesDropped};

/// What the sampler reads, from the configuration.
struct Sampler {
    store: Arc<dyn BacklogCounts>,
    endpoints: Vec<String>,
    targets: Vec<TargetRef>,
    count_interval: Duration,
    last_count: Option<Instant>,
    failing: bool,
}

/// Starts the sampler; it stops when `stopping` turns true.
pub fn spawn(store: Arc<dyn BacklogCounts>, settings: &Settings, stopping: watch::Receiver<bool>) {
    let sampler = Sampler {
        store,
        endpoints: settings.endpoints.iter().map(|e| e.id.clone()).collect(),
        targets: settings
            .endpoints
            .iter()
            .flat_map(|endpoint| {
                endpoint.targets.iter().map(|target| TargetRef {
                    endpoint_id: endpoint.id.clone(),
                    target: target.name.clone(),
                })
            })
            .collect(),
        count_interval: settings.metrics.count_interval,
        last_count: None,
        failing: false,
    };
    // One run at a time (`spawn_every`), so the lock is never contended:
    // it only lets each run borrow what the last one left.
    let sampler = Arc::new(Mutex::new(sampler));
    spawn_every(
        settings.metrics.sample_interval,
        FirstRun::Now,
        stopping,
        move || {
            let sampler = Arc::clone(&sampler);
            async move {
                LogLinesDropped.emit();
                let mut sampler = sampler.lock().await;
                let sampled = sampler.sample().await;
                sampler.note(sampled);
            }
        },
    );
}

impl Sampler {
    async fn sample(&mut self) -> Result<(), StoreError> {
        let backlog = self.store.backlog(&self.endpoints, &self.targets).await?;
        BacklogSampled {
            backlog: &backlog,
            endpoints: &self.endpoints,
            now_ms: clock::unix_millis(),
        }
        .emit();
        let mut statuses = vec![InboxStatus::Accepted, InboxStatus::Failed];
        let count_due = self
            .last_count
            .is_none_or(|at| at.elapsed() >= self.count_interval);
        if count_due {
            statuses.push(InboxStatus::Processed);
        }
        for status in statuses {
            let rows = self.store.count_by_status(status).await?;
            InboxRowsCounted { status, rows }.emit();
        }
        if count_due {
            self.last_count = Some(Instant::now());
        }
        Ok(())
    }

    /// Logs the first failure of a streak, and the recovery.
    fn note(&mut self, sampled: Result<(), StoreError>) {
        match sampled {
            Ok(()) if self.failing => {
                self.failing = false;
                tracing::info!(message = "Database gauges are sampled again.");
            }
            Ok(()) => {}
            Err(error) if !self.failing => {
                self.failing = true;
                tracing::warn!(
                    message = "Could not sample the database gauges; they keep their last values.",
                    %error
                );
            }
            Err(_) => {}
        }
    }
}
