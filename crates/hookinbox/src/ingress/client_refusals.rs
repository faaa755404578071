//! A per-client limit for unverified traffic. The endpoint's own rate limit
//! is charged only by verified requests, so junk cannot spend a provider's
//! share; this limit is what junk spends instead. Each request from a
//! client that is refused before or at verification (bad signature, unknown
//! endpoint, too large, too slow, …) charges that client's bucket; once it
//! is empty the client's next requests are answered 429 before their body
//! is read, until a refusal's worth has refilled. Verified requests never
//! charge it, so a provider sending thousands of real events from one
//! address is never slowed by it.
//!
//! IPv6 clients are counted per /64, the block one host usually holds.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use governor::clock::{Clock, DefaultClock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

/// Clients remembered as over their limit at most; past it (an attack from
/// very many addresses) the expired entries are dropped first, and if none
/// are, new clients are not blocked rather than memory growing.
const MAX_BLOCKED_CLIENTS: usize = 100_000;
/// Charges between two sweeps of the limiter's per-client state.
const SWEEP_EVERY: u32 = 10_000;

/// The clients' refusal buckets.
pub struct ClientRefusals<C: Clock = DefaultClock> {
    buckets: RateLimiter<IpAddr, DefaultKeyedStateStore<IpAddr>, C, NoOpMiddleware<C::Instant>>,
    blocked: Mutex<HashMap<IpAddr, C::Instant>>,
    clock: C,
    charges: AtomicU32,
}

impl ClientRefusals {
    /// `per_second` refusals refill per client, up to `burst`.
    pub fn new(per_second: NonZeroU32, burst: NonZeroU32) -> ClientRefusals {
        ClientRefusals::with_clock(per_second, burst, DefaultClock::default())
    }
}

impl<C: Clock + Clone> ClientRefusals<C> {
    pub fn with_clock(per_second: NonZeroU32, burst: NonZeroU32, clock: C) -> ClientRefusals<C> {
        let quota = Quota::per_second(per_second).allow_burst(burst);
        ClientRefusals {
            buckets: RateLimiter::new(quota, DefaultKeyedStateStore::default(), clock.clone()),
            blocked: Mutex::new(HashMap::new()),
            clock,
            charges: AtomicU32::new(0),
        }
    }

    /// `Err(seconds to wait)` while `client` has spent its refusals.
    pub fn admit(&self, client: IpAddr) -> Result<(), u64> {
        let key = key(client);
        let Ok(blocked) = self.blocked.lock() else {
            return Ok(());
        };
        match blocked.get(&key) {
            Some(until) if *until > self.clock.now() => {
                let wait: std::time::Duration = until.duration_since(self.clock.now()).into();
                Err(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
            }
            _ => Ok(()),
        }
    }

    /// Charges one refused request to `client`.
    pub fn charge(&self, client: IpAddr) {
        let key = key(client);
        if self.charges.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.sweep();
        }
        let Err(not_until) = self.buckets.check_key(&key) else {
            return;
        };
        let Ok(mut blocked) = self.blocked.lock() else {
            return;
        };
        if blocked.len() >= MAX_BLOCKED_CLIENTS {
            let now = self.clock.now();
            blocked.retain(|_, until| *until > now);
        }
        if blocked.len() < MAX_BLOCKED_CLIENTS {
            blocked.insert(key, not_until.earliest_possible());
        }
    }

    /// Forgets clients whose buckets are full again.
    fn sweep(&self) {
        self.buckets.retain_recent();
        self.buckets.shrink_to_fit();
        if let Ok(mut blocked) = self.blocked.lock() {
            let now = self.clock.now();
            blocked.retain(|_, until| *until > now);
            blocked.shrink_to_fit();
        }
    }
}

/// What one client is counted as: its IPv4 address, or its IPv6 /64.
fn key(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;
    use std::time::Duration;

    fn refusals(
        per_second: u32,
        burst: u32,
    ) -> (ClientRefusals<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        let limit = ClientRefusals::with_clock(
            NonZeroU32::new(per_second).unwrap(),
            NonZeroU32::new(burst).unwrap(),
            clock.clone(),
        );
        (limit, clock)
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_client_is_admitted_until_its_refusals_are_spent_then_again_after_refill() {
        let (limit, clock) = refusals(2, 3);
        let junk = ip("203.0.113.9");
        for _ in 0..3 {
            assert_eq!(limit.admit(junk), Ok(()));
            limit.charge(junk);
        }
        // The burst is spent, but the third refusal still fitted it.
        assert_eq!(limit.admit(junk), Ok(()));
        limit.charge(junk);
        // The fourth did not: blocked until half a second (one refusal at
        // 2/s) has refilled, announced as one whole second.
        assert_eq!(limit.admit(junk), Err(1));
        clock.advance(Duration::from_millis(499));
        assert_eq!(limit.admit(junk), Err(1));
        clock.advance(Duration::from_millis(1));
        assert_eq!(limit.admit(junk), Ok(()));
    }

    #[test]
    fn clients_are_counted_apart_and_ipv6_per_64() {
        let (limit, _clock) = refusals(1, 1);
        limit.charge(ip("2001:db8:1:2::1"));
        limit.charge(ip("2001:db8:1:2::ffff"));
        assert!(limit.admit(ip("2001:db8:1:2:3:4:5:6")).is_err());
        assert_eq!(limit.admit(ip("2001:db8:1:3::1")), Ok(()));
        assert_eq!(limit.admit(ip("198.51.100.1")), Ok(()));
    }
}
