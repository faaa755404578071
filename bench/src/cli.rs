//! Command-line flags. Every flag is documented in `bench/README.md` too.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Parser;

use crate::signing::Scheme;

/// Largest body the generator will produce: hookinbox's default `max_body_bytes`.
pub const MAX_BODY_BYTES: u32 = 1024 * 1024;

#[derive(Debug, Parser)]
#[command(
    name = "loadgen",
    about = "Open-loop load generator for hookinbox: signed webhooks at a fixed rate, \
             latency measured from the intended send time."
)]
pub struct Args {
    /// Full URL of the endpoint, e.g. http://127.0.0.1:8080/hooks/bench (plain HTTP/1.1).
    #[arg(long)]
    pub url: String,

    /// Secret the endpoint trusts for `--scheme`. Never printed.
    #[arg(long, env = "LOADGEN_SECRET", hide_env_values = true)]
    pub secret: String,

    /// The signature the requests carry: the endpoint's provider (`lab`,
    /// `standard` for Standard Webhooks with a `whsec_<base64>` secret, `stripe`).
    #[arg(long, value_enum, default_value_t = Scheme::Lab)]
    pub scheme: Scheme,

    /// Open loop: requests per second, scheduled at t0 + i/rate whatever the responses.
    #[arg(
        long,
        required_unless_present = "saturate",
        conflicts_with = "saturate"
    )]
    pub rate: Option<f64>,

    /// Closed loop instead: `--concurrency` senders back to back, to find the maximum ack rate.
    #[arg(long)]
    pub saturate: bool,

    /// Senders in `--saturate` mode (each waits for its response before sending again).
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,

    /// Seconds of recorded load.
    #[arg(long, default_value_t = 30.0)]
    pub duration: f64,

    /// Seconds of load before the recorded part (same rate, not recorded).
    #[arg(long, default_value_t = 5.0)]
    pub warmup: f64,

    /// Open loop: most requests in flight at once. A request due while this many are
    /// outstanding is not sent and is counted as the error `inflight_limit`.
    #[arg(long, default_value_t = 1024)]
    pub max_inflight: usize,

    /// Seconds one request may take (connect, send, full response) before it counts as the
    /// error `timeout`.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,

    /// Tokio worker threads of the generator (the pacer is one more, mostly sleeping thread).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,

    /// Run id put in every event id (`bench-<run>-<n>`); default: unix time and pid, so
    /// reruns never collide with ids the server already stored.
    #[arg(long)]
    pub run_id: Option<String>,

    /// Target mean body size in bytes, large bodies included.
    #[arg(long, default_value_t = 10_240)]
    pub body_mean: u32,

    /// Shape (sigma of ln size) of the lognormal part of the body size distribution.
    #[arg(long, default_value_t = 1.0)]
    pub body_sigma: f64,

    /// Share of requests whose body is exactly `--large-size` bytes (0.002 = 0.2 %).
    #[arg(long, default_value_t = 0.002)]
    pub large_share: f64,

    /// Size of the large bodies in bytes; at most 1 MiB (the server's default limit).
    #[arg(long, default_value_t = 1_000_000)]
    pub large_size: u32,

    /// Seed of the body size table and padding, so runs are reproducible.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Also write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

impl Args {
    /// Rejects values that would make the run meaningless, naming the flag.
    pub fn validate(&self) -> Result<()> {
        if let Some(rate) = self.rate {
            if !(rate.is_finite() && rate > 0.0) {
                bail!("--rate must be a positive number of requests per second");
            }
        }
        if !(self.duration.is_finite() && self.duration > 0.0) {
            bail!("--duration must be positive");
        }
        if !(self.warmup.is_finite() && self.warmup >= 0.0) {
            bail!("--warmup must be zero or positive");
        }
        if !(self.timeout.is_finite() && self.timeout > 0.0) {
            bail!("--timeout must be positive");
        }
        if self.concurrency == 0 {
            bail!("--concurrency must be at least 1");
        }
        if self.max_inflight == 0 || self.max_inflight > u32::MAX as usize {
            bail!("--max-inflight must be between 1 and {}", u32::MAX);
        }
        if self.threads == 0 {
            bail!("--threads must be at least 1");
        }
        if self.large_size > MAX_BODY_BYTES {
            bail!("--large-size must be at most {MAX_BODY_BYTES} bytes");
        }
        if let Some(run) = &self.run_id {
            if run.is_empty()
                || run.len() > 32
                || !run.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            {
                bail!("--run-id must be 1 to 32 characters of [A-Za-z0-9-]");
            }
        }
        Ok(())
    }
}
