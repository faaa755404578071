//! Closed loop, to find the most acknowledgements per second the server can give:
//! `concurrency` senders, each sending its next request as soon as the previous
//! one is answered. Latencies here run from the actual send and are not
//! coordinated-omission safe; use the open loop for latency.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::load::Load;

/// Runs warmup then the recorded window; returns the window's start.
pub async fn run(
    load: Arc<Load>,
    concurrency: usize,
    warmup: Duration,
    duration: Duration,
) -> Instant {
    let window_start = Instant::now() + warmup;
    let end = window_start + duration;
    let next_seq = Arc::new(AtomicU64::new(0));
    let mut senders = JoinSet::new();
    for _ in 0..concurrency {
        let load = load.clone();
        let next_seq = next_seq.clone();
        senders.spawn(async move {
            loop {
                let now = Instant::now();
                if now >= end {
                    break;
                }
                let seq = next_seq.fetch_add(1, Ordering::Relaxed);
                load.one(seq, None, now >= window_start).await;
            }
        });
    }
    while senders.join_next().await.is_some() {}
    window_start
}
