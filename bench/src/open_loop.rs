//! Open loop: request `i` is due at `t0 + i / rate`, whatever happened to the
//! requests before it.
//!
//! A closed-loop generator waits for a response before sending again, so a
//! server stall also stalls the generator and the requests that *would* have
//! arrived during the stall are never sent — the stall vanishes from the
//! percentiles ("coordinated omission"). Here a dedicated pacer thread hands
//! each request to the runtime at its due time (`std::thread::sleep` keeps
//! sub-millisecond precision, where tokio timers round up to whole
//! milliseconds), and latency is measured from the due time, so any delay —
//! the server's, the network's or the generator's own — counts.
//!
//! In-flight requests are bounded by a semaphore: a request due while
//! `max_inflight` are outstanding is not sent and is counted as the error
//! `inflight_limit`, so overload shows up in the report instead of silently
//! thinning the load.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::runtime::Handle;
use tokio::sync::{oneshot, Semaphore};

use crate::load::Load;

/// The due times of a run: `warmup` requests first (sent, not recorded), then `measured`.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    rate: f64,
    warmup: u64,
    measured: u64,
}

impl Schedule {
    pub fn new(rate: f64, warmup_s: f64, duration_s: f64) -> Self {
        Self {
            rate,
            warmup: (warmup_s * rate).round() as u64,
            measured: (duration_s * rate).round() as u64,
        }
    }

    pub fn measured(&self) -> u64 {
        self.measured
    }

    fn total(&self) -> u64 {
        self.warmup + self.measured
    }

    fn is_measured(&self, i: u64) -> bool {
        i >= self.warmup
    }

    /// Offset of request `i` from `t0`, computed from `i` (not by adding
    /// intervals) so rounding never accumulates into rate drift.
    fn due(&self, i: u64) -> Duration {
        Duration::from_secs_f64(i as f64 / self.rate)
    }
}

/// Runs the schedule to the end and waits for every sent request to finish.
/// Returns the due time of the first measured request (start of the window).
pub async fn run(load: Arc<Load>, schedule: Schedule, max_inflight: usize) -> Result<Instant> {
    let permits = Arc::new(Semaphore::new(max_inflight));
    // A short lead so the first due times are not already past when the pacer starts.
    let t0 = Instant::now() + Duration::from_millis(50);
    let (done_tx, done_rx) = oneshot::channel();
    let pacer = {
        let permits = permits.clone();
        let handle = Handle::current();
        std::thread::Builder::new()
            .name("pacer".into())
            .spawn(move || {
                pace(&load, schedule, t0, &permits, &handle);
                let _ = done_tx.send(());
            })
            .context("starting the pacer thread")?
    };
    // An error here means the pacer panicked; the join below reports it.
    let _ = done_rx.await;
    pacer
        .join()
        .map_err(|_| anyhow::anyhow!("the pacer thread panicked"))?;
    // Every request holds a permit until it has finished (or timed out).
    let all = u32::try_from(max_inflight).context("--max-inflight")?;
    let _drained = permits.acquire_many(all).await?;
    Ok(t0 + schedule.due(schedule.warmup))
}

fn pace(
    load: &Arc<Load>,
    schedule: Schedule,
    t0: Instant,
    permits: &Arc<Semaphore>,
    handle: &Handle,
) {
    for i in 0..schedule.total() {
        let due = t0 + schedule.due(i);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let measured = schedule.is_measured(i);
        match permits.clone().try_acquire_owned() {
            Ok(permit) => {
                let load = load.clone();
                handle.spawn(async move {
                    load.one(i, Some(due), measured).await;
                    drop(permit);
                });
            }
            Err(_) if measured => load.recorder.not_sent("inflight_limit"),
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_counts_and_due_times() {
        let schedule = Schedule::new(2_000.0, 1.0, 10.0);
        assert_eq!(schedule.warmup, 2_000);
        assert_eq!(schedule.measured(), 20_000);
        assert!(!schedule.is_measured(1_999));
        assert!(schedule.is_measured(2_000));
        assert_eq!(schedule.due(2_000), Duration::from_secs(1));
        assert_eq!(schedule.due(21_999), Duration::from_micros(10_999_500));
    }

    #[test]
    fn fractional_rates_do_not_drift() {
        let schedule = Schedule::new(3.0, 0.0, 1_000.0);
        let last = schedule.due(2_999_999);
        assert!((last.as_secs_f64() - 999_999.666_666).abs() < 1e-3);
    }
}
