//! Counts and histograms of the recorded (post-warmup) requests.
//!
//! One mutex around everything: at the rates two shared cores can sustain
//! (thousands per second) an uncontended lock per request costs nothing
//! measurable, and it keeps the counts and histograms consistent.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::sender::Outcome;

/// Highest latency a histogram tracks (one hour, in microseconds); larger values saturate.
const HIGHEST_US: u64 = 3_600_000_000;

#[derive(Debug)]
pub struct Tally {
    /// Intended send time (open loop) or actual send time (saturate) to full 2xx response, µs.
    pub latency_us: Histogram<u64>,
    /// Intended send time to the moment the request task started, µs (open loop only).
    pub send_lag_us: Histogram<u64>,
    pub sent: u64,
    pub bytes_sent: u64,
    pub ok: u64,
    pub duplicates: u64,
    pub statuses: BTreeMap<u16, u64>,
    pub errors: BTreeMap<&'static str, u64>,
    pub first_send: Option<Instant>,
    pub last_send: Option<Instant>,
    pub last_ok: Option<Instant>,
    /// 2xx responses to warmup requests (not in the histograms).
    pub warmup_ok: u64,
    /// Warmup requests that ended any other way.
    pub warmup_not_ok: u64,
}

pub struct Recorder {
    tally: Mutex<Tally>,
}

impl Recorder {
    pub fn new() -> Self {
        Self {
            tally: Mutex::new(Tally::empty()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Tally> {
        // A panic elsewhere cannot leave the counters half-updated in a way that matters.
        self.tally
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A request is about to go out; `lag` is how late that is against its schedule.
    pub fn sent(&self, at: Instant, lag: Option<Duration>, body_bytes: usize) {
        let mut tally = self.lock();
        tally.sent += 1;
        tally.bytes_sent += body_bytes as u64;
        tally.first_send = Some(tally.first_send.map_or(at, |first| first.min(at)));
        tally.last_send = Some(tally.last_send.map_or(at, |last| last.max(at)));
        if let Some(lag) = lag {
            tally.send_lag_us.saturating_record(micros(lag));
        }
    }

    /// A request ended at `at`, `latency` after its start of measurement.
    pub fn finished(&self, outcome: Outcome, latency: Duration, at: Instant) {
        let mut tally = self.lock();
        match outcome {
            Outcome::Ok { duplicate } => {
                tally.ok += 1;
                tally.duplicates += u64::from(duplicate);
                tally.latency_us.saturating_record(micros(latency));
                tally.last_ok = Some(tally.last_ok.map_or(at, |last| last.max(at)));
            }
            Outcome::Status(status) => *tally.statuses.entry(status).or_default() += 1,
            Outcome::Error(kind) => *tally.errors.entry(kind).or_default() += 1,
        }
    }

    /// A warmup request ended: only counted, so that the 2xx of the whole run
    /// (warmup included) can be compared with what the server stored.
    pub fn warmup_finished(&self, outcome: Outcome) {
        let mut tally = self.lock();
        match outcome {
            Outcome::Ok { .. } => tally.warmup_ok += 1,
            Outcome::Status(_) | Outcome::Error(_) => tally.warmup_not_ok += 1,
        }
    }

    /// A request was due but could not be sent at all.
    pub fn not_sent(&self, kind: &'static str) {
        *self.lock().errors.entry(kind).or_default() += 1;
    }

    /// Everything recorded so far, leaving the recorder empty.
    pub fn take(&self) -> Tally {
        std::mem::replace(&mut *self.lock(), Tally::empty())
    }
}

impl Tally {
    fn empty() -> Self {
        let histogram =
            || Histogram::new_with_bounds(1, HIGHEST_US, 3).expect("static histogram bounds");
        Self {
            latency_us: histogram(),
            send_lag_us: histogram(),
            sent: 0,
            bytes_sent: 0,
            ok: 0,
            duplicates: 0,
            statuses: BTreeMap::new(),
            errors: BTreeMap::new(),
            first_send: None,
            last_send: None,
            last_ok: None,
            warmup_ok: 0,
            warmup_not_ok: 0,
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_land_in_their_counters() {
        let recorder = Recorder::new();
        let t0 = Instant::now();
        recorder.sent(t0, Some(Duration::from_micros(30)), 100);
        recorder.sent(t0 + Duration::from_millis(1), None, 50);
        recorder.finished(
            Outcome::Ok { duplicate: false },
            Duration::from_millis(2),
            t0,
        );
        recorder.finished(Outcome::Ok { duplicate: true }, Duration::ZERO, t0);
        recorder.finished(Outcome::Status(503), Duration::ZERO, t0);
        recorder.finished(Outcome::Error("timeout"), Duration::ZERO, t0);
        recorder.not_sent("inflight_limit");
        recorder.warmup_finished(Outcome::Ok { duplicate: false });
        recorder.warmup_finished(Outcome::Status(503));
        let tally = recorder.take();
        assert_eq!((tally.warmup_ok, tally.warmup_not_ok), (1, 1));
        assert_eq!((tally.sent, tally.bytes_sent), (2, 150));
        assert_eq!((tally.ok, tally.duplicates), (2, 1));
        assert_eq!(tally.statuses[&503], 1);
        assert_eq!(tally.errors["timeout"], 1);
        assert_eq!(tally.errors["inflight_limit"], 1);
        assert_eq!(tally.latency_us.len(), 2);
        assert_eq!(tally.send_lag_us.len(), 1);
        assert_eq!(
            tally.last_send.unwrap() - tally.first_send.unwrap(),
            Duration::from_millis(1)
        );
    }
}
