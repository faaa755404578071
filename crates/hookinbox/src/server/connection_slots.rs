//! At most `capacity` open connections per listener. A connection holds a
//! [`Slot`] from accept to close; when none is free, the accept loop stops
//! accepting (the kernel's listen backlog holds new connections meanwhile)
//! and asks the least recently active *idle* connections — no request in
//! flight — to close, as nginx reuses keep-alive connections when it runs
//! out. A flood of idle connections therefore costs file descriptors only up
//! to the cap, and cannot keep a provider's request waiting for long.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Idle connections asked to close each time the cap is met.
const EVICTION_BATCH: usize = 16;
/// How long the accept loop waits for a freed slot before asking more
/// connections to close (some asked ones may be mid-header, which only the
/// header timeout ends).
const EVICTION_RETRY: Duration = Duration::from_millis(100);

/// The open connections of one listener.
pub struct ConnectionSlots {
    permits: Arc<Semaphore>,
    capacity: u32,
    open: Mutex<HashMap<u64, Arc<Activity>>>,
    next_id: AtomicU64,
    epoch: Instant,
    listener: &'static str,
}

/// What the accept loop knows about one connection: whether a request is
/// in flight, when it was last active, and how to ask it to close.
pub struct Activity {
    in_flight: AtomicU32,
    /// Milliseconds since the listener's epoch.
    last_active_ms: AtomicU64,
    asked_to_close: AtomicBool,
    close: Notify,
    epoch: Instant,
}

impl Activity {
    /// A request arrived on the connection.
    pub fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.touch();
    }

    /// Its answer is on its way.
    pub fn request_finished(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.touch();
    }

    fn touch(&self) {
        let now = self.epoch.elapsed().as_millis() as u64;
        self.last_active_ms.store(now, Ordering::Relaxed);
    }

    fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }
}

/// One open connection's place under the cap; dropping it frees the place.
pub struct Slot {
    id: u64,
    activity: Arc<Activity>,
    slots: Arc<ConnectionSlots>,
    _permit: OwnedSemaphorePermit,
}

impl Slot {
    pub fn activity(&self) -> Arc<Activity> {
        Arc::clone(&self.activity)
    }

    /// Resolves when the accept loop needs this connection's place.
    pub async fn close_requested(&self) {
        self.activity.close.notified().await;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.slots.open.lock() {
            open.remove(&self.id);
        }
        metrics::gauge!("hookinbox_open_connections", "listener" => self.slots.listener)
            .decrement(1.0);
    }
}

impl ConnectionSlots {
    /// Room for `capacity` connections (at least one); `listener` labels
    /// the metrics (`public`, `admin`).
    pub fn new(capacity: usize, listener: &'static str) -> ConnectionSlots {
        let capacity = u32::try_from(capacity.max(1)).unwrap_or(u32::MAX);
        ConnectionSlots {
            permits: Arc::new(Semaphore::new(capacity as usize)),
            capacity,
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            epoch: Instant::now(),
            listener,
        }
    }

    /// Waits for a free place, asking idle connections to close while the
    /// listener is full.
    pub async fn acquire(self: &Arc<Self>) -> Slot {
        let permit = match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                metrics::counter!("hookinbox_connection_cap_reached_total", "listener" => self.listener)
                    .increment(1);
                loop {
                    self.ask_idle_to_close(EVICTION_BATCH);
                    let freed = Arc::clone(&self.permits).acquire_owned();
                    if let Ok(Ok(permit)) = tokio::time::timeout(EVICTION_RETRY, freed).await {
                        break permit;
                    }
                }
            }
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity {
            in_flight: AtomicU32::new(0),
            last_active_ms: AtomicU64::new(self.epoch.elapsed().as_millis() as u64),
            asked_to_close: AtomicBool::new(false),
            close: Notify::new(),
            epoch: self.epoch,
        });
        if let Ok(mut open) = self.open.lock() {
            open.insert(id, Arc::clone(&activity));
        }
        metrics::gauge!("hookinbox_open_connections", "listener" => self.listener).increment(1.0);
        Slot {
            id,
            activity,
            slots: Arc::clone(self),
            _permit: permit,
        }
    }

    /// Asks up to `count` idle connections, least recently active first,
    /// to close; returns how many were asked.
    fn ask_idle_to_close(&self, count: usize) -> usize {
        let Ok(open) = self.open.lock() else {
            return 0;
        };
        let mut idle: Vec<&Arc<Activity>> = open
            .values()
            .filter(|a| a.is_idle() && !a.asked_to_close.load(Ordering::Relaxed))
            .collect();
        let count = count.min(idle.len());
        if count == 0 {
            return 0;
        }
        if count < idle.len() {
            idle.select_nth_unstable_by_key(count - 1, |a| {
                a.last_active_ms.load(Ordering::Relaxed)
            });
        }
        for activity in &idle[..count] {
            activity.asked_to_close.store(true, Ordering::Relaxed);
            activity.close.notify_one();
        }
        count
    }

    /// Resolves once every connection has closed.
    pub async fn all_closed(&self) {
        let _ = self.permits.acquire_many(self.capacity).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_least_recently_active_idle_connections_are_asked_first() {
        let slots = Arc::new(ConnectionSlots::new(3, "test"));
        let oldest = slots.acquire().await;
        let busy = slots.acquire().await;
        let newest = slots.acquire().await;
        busy.activity().request_started();
        // Make `newest` the most recently active.
        tokio::time::sleep(Duration::from_millis(5)).await;
        newest.activity().request_finished_after_start_for_test();

        assert_eq!(slots.ask_idle_to_close(1), 1);
        assert!(oldest.activity.asked_to_close.load(Ordering::Relaxed));
        assert!(!newest.activity.asked_to_close.load(Ordering::Relaxed));
        // A connection with a request in flight is never asked.
        assert_eq!(slots.ask_idle_to_close(5), 1);
        assert!(newest.activity.asked_to_close.load(Ordering::Relaxed));
        assert!(!busy.activity.asked_to_close.load(Ordering::Relaxed));
        assert_eq!(slots.ask_idle_to_close(5), 0);
    }

    #[tokio::test]
    async fn a_full_listener_hands_out_a_slot_once_one_closes() {
        let slots = Arc::new(ConnectionSlots::new(1, "test"));
        let first = slots.acquire().await;
        let waiting = tokio::spawn({
            let slots = Arc::clone(&slots);
            async move { slots.acquire().await.id }
        });
        // The full listener asks the idle connection to close…
        first.close_requested().await;
        // …and its closing frees the place.
        drop(first);
        assert_eq!(waiting.await.unwrap(), 1);
    }

    impl Activity {
        fn request_finished_after_start_for_test(&self) {
            self.request_started();
            self.request_finished();
        }
    }
}
