//! Whether the delivery tasks of this process still run: `/readyz`'s
//! `workers` check. Each task (a target's worker loop, the lease rescuer)
//! holds a [`Heartbeat`] and beats at every turn of its loop; the check
//! fails when one has ended (returned or panicked while the process was
//! not stopping) or has not beaten for longer than its loop can take.
//!
//! How long a turn can take: a worker waits for a wake-up at most
//! `poll_interval`, and for a free slot at most one attempt, which an http
//! or nats target's timeout bounds below its lease (the lease is at least
//! twice the timeout); the rescuer sleeps `rescue_interval`. A task silent
//! for three times that (and at least [`MIN_STALL`]) is stuck: waiting on
//! a store that does not answer, or on a handler that never returns.
//!
//! The workers also record here the storage read faults they meet
//! (`storage_faults`): readiness names them as degraded.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::storage_faults::StorageFaults;
use crate::clock;

/// Never call a task stuck sooner than this: a slow poll is not a hang.
pub const MIN_STALL: Duration = Duration::from_secs(10);

/// The delivery tasks of one process.
#[derive(Default)]
pub struct Liveness {
    tasks: Mutex<Vec<Arc<Beat>>>,
    storage_faults: Arc<StorageFaults>,
}

struct Beat {
    name: String,
    last_ms: AtomicI64,
    stall_after_ms: i64,
    ended: AtomicBool,
}

/// Held by one task; marks it ended when dropped (its future returned, or
/// unwound from a panic), unless the task said it is [`Heartbeat::stopping`].
pub struct Heartbeat {
    beat: Arc<Beat>,
    stopping: bool,
}

impl Liveness {
    /// Registers a task named `name` whose loop turns at least every
    /// `longest_turn`; it counts as beating now.
    pub fn register(&self, name: impl Into<String>, longest_turn: Duration) -> Heartbeat {
        let stall_after = (longest_turn * 3).max(MIN_STALL);
        let beat = Arc::new(Beat {
            name: name.into(),
            last_ms: AtomicI64::new(clock::unix_millis()),
            stall_after_ms: i64::try_from(stall_after.as_millis()).unwrap_or(i64::MAX),
            ended: AtomicBool::new(false),
        });
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&beat));
        Heartbeat {
            beat,
            stopping: false,
        }
    }

    /// Where the workers record the events they could not read.
    pub fn storage_faults(&self) -> Arc<StorageFaults> {
        Arc::clone(&self.storage_faults)
    }

    /// The tasks that ended or are stuck at `now_ms`, by name (for the
    /// log; `/readyz` names only the check).
    pub fn failing(&self, now_ms: i64) -> Vec<String> {
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|beat| {
                beat.ended.load(Ordering::Relaxed)
                    || now_ms.saturating_sub(beat.last_ms.load(Ordering::Relaxed))
                        > beat.stall_after_ms
            })
            .map(|beat| beat.name.clone())
            .collect()
    }
}

impl Heartbeat {
    /// The task's loop turned.
    pub fn beat(&self) {
        self.beat
            .last_ms
            .store(clock::unix_millis(), Ordering::Relaxed);
    }

    /// The task stops because the process does: not a failure.
    pub fn stopping(mut self) {
        self.stopping = true;
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        if !self.stopping {
            self.beat.ended.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_failing_once_silent_past_its_stall_bound_and_fine_after_a_beat() {
        let liveness = Liveness::default();
        let heartbeat = liveness.register("worker lab/sink", Duration::from_secs(5));
        let now = clock::unix_millis();
        assert!(liveness.failing(now).is_empty());
        assert!(
            liveness.failing(now + 15_000).is_empty(),
            "3 × 5 s, not more"
        );
        assert_eq!(liveness.failing(now + 15_100), vec!["worker lab/sink"]);
        heartbeat.beat();
        assert!(liveness.failing(clock::unix_millis() + 1_000).is_empty());
    }

    #[test]
    fn short_loops_get_the_minimum_bound() {
        let liveness = Liveness::default();
        let _heartbeat = liveness.register("rescuer", Duration::from_millis(50));
        let now = clock::unix_millis();
        assert!(liveness.failing(now + 9_000).is_empty());
        assert_eq!(liveness.failing(now + 10_100).len(), 1);
    }

    #[test]
    fn a_task_that_ended_fails_unless_the_process_is_stopping() {
        let liveness = Liveness::default();
        let crashed = liveness.register("worker a/t", Duration::from_secs(1));
        let stopped = liveness.register("worker a/u", Duration::from_secs(1));
        let panicked = liveness.register("worker a/v", Duration::from_secs(1));
        drop(crashed);
        stopped.stopping();
        let _ = std::thread::spawn(move || {
            let _held = panicked;
            panic!("a target's code panicked");
        })
        .join();
        let mut failing = liveness.failing(clock::unix_millis());
        failing.sort();
        assert_eq!(failing, vec!["worker a/t", "worker a/v"]);
    }
}
