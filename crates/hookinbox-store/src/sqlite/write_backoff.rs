//! How long the payload log rests after a failed write before it touches
//! the disk again.
//!
//! Why fail fast instead of retrying: a full or failing disk rarely heals in
//! milliseconds. Retrying inside the writer would hold every waiting
//! request (and the delivery workers' body-less writes queued behind them)
//! until the disk answers or the commit deadline gives up on them; writing
//! again at once would spend the disk's last bytes and a log line on every
//! batch. Refusing batches with bodies for a short pause answers the
//! provider 503 + `Retry-After` at once (it retries, and the dedup key
//! makes the retry safe), keeps the writer free for everything else, and
//! still notices within a second when space returns.
//!
//! Pure: the caller passes `now`.

use std::time::{Duration, Instant};

/// The pause after the first failure of a run.
const FIRST_PAUSE: Duration = Duration::from_millis(50);
/// The pause never grows past this, so recovery is seen within a second.
const LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// A pause that doubles with each consecutive failure and ends at the
/// first success.
#[derive(Debug)]
pub(crate) struct WriteBackoff {
    /// Writes are refused before this instant; `None` while writes succeed.
    resume_at: Option<Instant>,
    /// The pause the next failure starts.
    next_pause: Duration,
}

impl Default for WriteBackoff {
    fn default() -> Self {
        WriteBackoff {
            resume_at: None,
            next_pause: FIRST_PAUSE,
        }
    }
}

impl WriteBackoff {
    /// Whether a write may be tried at `now`.
    pub(crate) fn allows(&self, now: Instant) -> bool {
        self.resume_at.is_none_or(|resume_at| now >= resume_at)
    }

    /// A write failed at `now`: refuse writes for the next pause.
    pub(crate) fn failed(&mut self, now: Instant) {
        self.resume_at = Some(now + self.next_pause);
        self.next_pause = (self.next_pause * 2).min(LONGEST_PAUSE);
    }

    /// A write succeeded: the next failure starts over at the first pause.
    pub(crate) fn succeeded(&mut self) {
        *self = WriteBackoff::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NANO: Duration = Duration::from_nanos(1);

    /// The pause each of `failures` consecutive failures imposed.
    fn pauses(failures: usize) -> Vec<Duration> {
        let mut backoff = WriteBackoff::default();
        let start = Instant::now();
        let mut now = start;
        let mut pauses = Vec::new();
        for _ in 0..failures {
            backoff.failed(now);
            let resume_at = backoff.resume_at.unwrap();
            assert!(!backoff.allows(resume_at - NANO));
            assert!(backoff.allows(resume_at));
            pauses.push(resume_at - now);
            now = resume_at;
        }
        pauses
    }

    #[test]
    fn writes_are_allowed_until_a_failure() {
        assert!(WriteBackoff::default().allows(Instant::now()));
    }

    #[test]
    fn the_pause_doubles_from_50_ms_and_stops_at_1_s() {
        let ms = Duration::from_millis;
        assert_eq!(
            pauses(7),
            [
                ms(50),
                ms(100),
                ms(200),
                ms(400),
                ms(800),
                ms(1000),
                ms(1000)
            ]
        );
    }

    #[test]
    fn a_success_ends_the_pause_and_the_next_failure_starts_over() {
        let mut backoff = WriteBackoff::default();
        let now = Instant::now();
        backoff.failed(now);
        backoff.failed(now);
        backoff.failed(now);
        backoff.succeeded();
        assert!(backoff.allows(now));
        backoff.failed(now);
        assert!(!backoff.allows(now + FIRST_PAUSE - NANO));
        assert!(backoff.allows(now + FIRST_PAUSE));
    }
}
