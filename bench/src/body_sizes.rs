//! The body size distribution, drawn once into a table before the run.
//!
//! Webhook bodies are mostly a few KiB with a long tail, and a receiver's worst
//! case is the rare body near its size limit. So the sizes are a mixture:
//! - a share `large_share` (default 0.2 %) of exactly `large_size` bytes
//!   (default 1,000,000: just under the server's 1 MiB limit). They are placed
//!   one at a random position in every block of `1 / large_share` consecutive
//!   requests, so every window of a run, not only the whole table, has its share;
//! - the rest a lognormal draw (shape `sigma`, default 1.0) clamped to
//!   `[MIN_BODY_BYTES, large_size]`, its location chosen so the mean of the whole
//!   mixture is `mean` (default 10 KiB): the lognormal part's mean is
//!   `(mean - share * large) / (1 - share)`, about 8.3 KB with the defaults
//!   (median about 5 KB).
//!
//! Drawing a table up front (seeded) keeps the generator cheap at run time and
//! makes runs comparable; the table's actual mean is printed, because clamping
//! and sampling move it a little from the target.

use anyhow::{bail, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Smallest body: the JSON envelope with a short pad.
pub const MIN_BODY_BYTES: u32 = 256;

/// Entries in the table; request `n` uses entry `n % TABLE_LEN`.
const TABLE_LEN: usize = 1 << 16;

#[derive(Debug, Clone, Copy)]
pub struct SizeSpec {
    pub mean: u32,
    pub sigma: f64,
    pub large_share: f64,
    pub large_size: u32,
}

#[derive(Debug)]
pub struct BodySizes {
    sizes: Vec<u32>,
}

impl BodySizes {
    pub fn draw(spec: SizeSpec, seed: u64) -> Result<Self> {
        Self::draw_len(spec, seed, TABLE_LEN)
    }

    fn draw_len(spec: SizeSpec, seed: u64, len: usize) -> Result<Self> {
        if !(0.0..0.5).contains(&spec.large_share) {
            bail!("--large-share must be in [0, 0.5)");
        }
        if !(spec.sigma.is_finite() && spec.sigma >= 0.0 && spec.sigma <= 3.0) {
            bail!("--body-sigma must be in [0, 3]");
        }
        if spec.large_size < MIN_BODY_BYTES {
            bail!("--large-size must be at least {MIN_BODY_BYTES} bytes");
        }
        let large_mass = spec.large_share * f64::from(spec.large_size);
        let small_mean = (f64::from(spec.mean) - large_mass) / (1.0 - spec.large_share);
        if small_mean < f64::from(MIN_BODY_BYTES) {
            bail!(
                "--body-mean {} is too small for --large-share {} of {} bytes",
                spec.mean,
                spec.large_share,
                spec.large_size
            );
        }
        // For a lognormal, mean = exp(mu + sigma^2 / 2).
        let mu = small_mean.ln() - spec.sigma * spec.sigma / 2.0;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut sizes: Vec<u32> = (0..len)
            .map(|_| {
                let size = (mu + spec.sigma * standard_normal(&mut rng)).exp();
                size.clamp(f64::from(MIN_BODY_BYTES), f64::from(spec.large_size)) as u32
            })
            .collect();
        // One large body at a random place in every block of 1/share requests, so
        // any window of a run (not just the whole table) has its share of them.
        if spec.large_share > 0.0 {
            let block = ((1.0 / spec.large_share).round() as usize).max(1);
            for start in (0..len).step_by(block) {
                let index = start + rng.random_range(0..block.min(len - start));
                sizes[index] = spec.large_size;
            }
        }
        Ok(Self { sizes })
    }

    /// Total body size of request `seq`.
    pub fn size(&self, seq: u64) -> usize {
        self.sizes[(seq % self.sizes.len() as u64) as usize] as usize
    }

    pub fn summary(&self, large_size: u32) -> SizeSummary {
        let mut sorted = self.sizes.clone();
        sorted.sort_unstable();
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q) as usize];
        SizeSummary {
            entries: sorted.len(),
            mean: sorted.iter().map(|&s| f64::from(s)).sum::<f64>() / sorted.len() as f64,
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            large: sorted.iter().filter(|&&s| s == large_size).count(),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SizeSummary {
    pub entries: usize,
    pub mean: f64,
    pub p50: u32,
    pub p90: u32,
    pub p99: u32,
    pub large: usize,
}

/// Box–Muller; one normal draw per call is plenty at table-building time.
fn standard_normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1], so ln is finite
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> SizeSpec {
        SizeSpec {
            mean: 10_240,
            sigma: 1.0,
            large_share: 0.002,
            large_size: 1_000_000,
        }
    }

    #[test]
    fn mixture_mean_is_near_the_target() {
        let summary = BodySizes::draw(spec(), 7).unwrap().summary(1_000_000);
        assert!(
            (summary.mean - 10_240.0).abs() < 10_240.0 * 0.05,
            "mean {}",
            summary.mean
        );
        assert_eq!(summary.large, 132); // one per block of 500: ceil(65536 / 500)
        assert!(summary.p50 > 3_000 && summary.p50 < 7_000, "{summary:?}");
    }

    #[test]
    fn sizes_stay_in_bounds_and_are_reproducible() {
        let a = BodySizes::draw_len(spec(), 3, 4096).unwrap();
        let b = BodySizes::draw_len(spec(), 3, 4096).unwrap();
        assert_eq!(a.sizes, b.sizes);
        assert!(a
            .sizes
            .iter()
            .all(|&s| (MIN_BODY_BYTES..=1_000_000).contains(&s)));
        assert_eq!(a.size(4096 + 5), a.size(5));
        for block in a.sizes.chunks(500) {
            assert_eq!(block.iter().filter(|&&s| s == 1_000_000).count(), 1);
        }
    }

    #[test]
    fn impossible_mean_is_refused() {
        let spec = SizeSpec {
            mean: 1_000,
            ..spec()
        };
        assert!(BodySizes::draw(spec, 1).is_err());
    }
}
