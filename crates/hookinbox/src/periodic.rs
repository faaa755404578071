//! Work `serve` does in the background on a timer — the retention purge,
//! the metrics sampler, reconciliation, the readiness gauge — in one
//! shape: every interval, never two runs at once (a slow run delays the
//! next instead of piling up), until the process stops.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};

/// When the first run happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstRun {
    /// At once.
    Now,
    /// One interval after start-up (a restart is no reason to run).
    AfterOneInterval,
}

/// Runs `work` every `interval` until `stopping` turns true.
pub fn spawn_every<F, Fut>(
    interval: Duration,
    first: FirstRun,
    mut stopping: watch::Receiver<bool>,
    mut work: F,
) where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let start = match first {
            FirstRun::Now => Instant::now(),
            FirstRun::AfterOneInterval => Instant::now() + interval,
        };
        let mut ticks = tokio::time::interval_at(start, interval);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                _ = stopping.changed() => return,
            }
            work().await;
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn it_runs_every_interval_from_its_first_run_until_stopped() {
        for (first, runs_at_start) in [(FirstRun::Now, 1), (FirstRun::AfterOneInterval, 0)] {
            let runs = Arc::new(AtomicUsize::new(0));
            let (stop, stopping) = watch::channel(false);
            let counted = Arc::clone(&runs);
            spawn_every(Duration::from_secs(10), first, stopping, move || {
                let counted = Arc::clone(&counted);
                async move {
                    counted.fetch_add(1, Ordering::Relaxed);
                }
            });
            tokio::time::sleep(Duration::from_millis(1)).await;
            assert_eq!(runs.load(Ordering::Relaxed), runs_at_start, "{first:?}");
            tokio::time::sleep(Duration::from_secs(20)).await;
            assert_eq!(runs.load(Ordering::Relaxed), runs_at_start + 2, "{first:?}");
            stop.send_replace(true);
            tokio::time::sleep(Duration::from_secs(30)).await;
            assert_eq!(runs.load(Ordering::Relaxed), runs_at_start + 2, "stopped");
        }
    }
}
