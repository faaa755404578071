//! The run's result: a human table on stdout and the same numbers as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::body_sizes::{SizeSpec, SizeSummary};
use crate::recorder::Tally;

#[derive(Debug, Serialize)]
pub struct Report {
    /// `open_loop` or `saturate`.
    pub mode: &'static str,
    pub url: String,
    pub run_id: String,
    /// Requests per second asked for (open loop).
    pub target_rate: Option<f64>,
    /// Closed-loop senders (saturate).
    pub concurrency: Option<usize>,
    pub warmup_s: f64,
    pub duration_s: f64,
    /// Recorded requests the schedule called for (open loop).
    pub scheduled: Option<u64>,
    /// Recorded requests actually sent.
    pub sent: u64,
    /// Sends per second between the first and the last recorded send.
    pub achieved_rate: f64,
    /// 2xx responses per second from the window's start to the last 2xx.
    pub ack_rate: f64,
    /// 2xx responses.
    pub ok: u64,
    /// 2xx responses that said `"duplicate":true` (should be 0: every id is new).
    pub duplicates: u64,
    /// Other statuses, by status code.
    pub non_2xx: BTreeMap<String, u64>,
    /// Requests without a complete response (or never sent), by kind.
    pub errors: BTreeMap<String, u64>,
    /// 2xx responses to warmup requests: with `ok`, every acknowledgement of
    /// the run, which `bench/run.sh` compares with the rows the server stored.
    pub warmup_ok: u64,
    /// Warmup requests that got no 2xx.
    pub warmup_not_ok: u64,
    /// 2xx latency in microseconds: from the intended send time (open loop) or
    /// the actual send (saturate) to the full response.
    pub latency_us: Percentiles,
    /// How late the generator started requests against their schedule, µs (open loop).
    pub send_lag_us: Option<Percentiles>,
    /// Request body bytes sent in the recorded window.
    pub bytes_sent: u64,
    pub mean_body_bytes: f64,
    pub body_sizes: BodySizeReport,
    /// CPU seconds the generator used over the whole run (warmup included).
    pub generator_cpu_s: Option<f64>,
    /// The same as a percentage of one core over the run's wall time.
    pub generator_cpu_percent: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub max: u64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Self {
        Self {
            count: h.len(),
            mean: h.mean(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p99_9: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct BodySizeReport {
    pub target_mean: u32,
    pub sigma: f64,
    pub large_share: f64,
    pub large_size: u32,
    pub table: SizeSummary,
}

impl BodySizeReport {
    pub fn new(spec: SizeSpec, table: SizeSummary) -> Self {
        Self {
            target_mean: spec.mean,
            sigma: spec.sigma,
            large_share: spec.large_share,
            large_size: spec.large_size,
            table,
        }
    }
}

/// What the report needs besides the tally.
pub struct RunFacts {
    pub mode: &'static str,
    pub url: String,
    pub run_id: String,
    pub target_rate: Option<f64>,
    pub concurrency: Option<usize>,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub scheduled: Option<u64>,
    pub window_start: Instant,
    pub body_sizes: BodySizeReport,
    pub cpu_s: Option<f64>,
    pub wall_s: f64,
}

impl Report {
    pub fn new(facts: RunFacts, tally: &Tally) -> Self {
        let achieved_rate = match (tally.first_send, tally.last_send) {
            (Some(first), Some(last)) if tally.sent > 1 && last > first => {
                (tally.sent - 1) as f64 / (last - first).as_secs_f64()
            }
            _ => 0.0,
        };
        let ack_rate = match tally.last_ok {
            Some(last) if last > facts.window_start => {
                tally.ok as f64 / (last - facts.window_start).as_secs_f64()
            }
            _ => 0.0,
        };
        Self {
            mode: facts.mode,
            url: facts.url,
            run_id: facts.run_id,
            target_rate: facts.target_rate,
            concurrency: facts.concurrency,
            warmup_s: facts.warmup_s,
            duration_s: facts.duration_s,
            scheduled: facts.scheduled,
            sent: tally.sent,
            achieved_rate,
            ack_rate,
            ok: tally.ok,
            duplicates: tally.duplicates,
            non_2xx: tally
                .statuses
                .iter()
                .map(|(status, n)| (status.to_string(), *n))
                .collect(),
            errors: tally
                .errors
                .iter()
                .map(|(kind, n)| (kind.to_string(), *n))
                .collect(),
            warmup_ok: tally.warmup_ok,
            warmup_not_ok: tally.warmup_not_ok,
            latency_us: Percentiles::of(&tally.latency_us),
            send_lag_us: (facts.mode == "open_loop").then(|| Percentiles::of(&tally.send_lag_us)),
            bytes_sent: tally.bytes_sent,
            mean_body_bytes: if tally.sent > 0 {
                tally.bytes_sent as f64 / tally.sent as f64
            } else {
                0.0
            },
            body_sizes: facts.body_sizes,
            generator_cpu_s: facts.cpu_s,
            generator_cpu_percent: facts
                .cpu_s
                .filter(|_| facts.wall_s > 0.0)
                .map(|cpu| 100.0 * cpu / facts.wall_s),
        }
    }

    /// The human-readable table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let mut row = |name: &str, value: String| {
            let _ = writeln!(out, "  {name:<16} {value}");
        };
        row("mode", format!("{}  {}", self.mode, self.url));
        row("run id", self.run_id.clone());
        row(
            "window",
            format!(
                "{} s recorded after {} s warmup",
                self.duration_s, self.warmup_s
            ),
        );
        if let Some(rate) = self.target_rate {
            row("target rate", format!("{rate:.1} req/s"));
        }
        if let Some(c) = self.concurrency {
            row("concurrency", c.to_string());
        }
        let scheduled = self
            .scheduled
            .map(|s| format!(" of {s} scheduled"))
            .unwrap_or_default();
        row(
            "achieved rate",
            format!(
                "{:.1} req/s  (sent {}{scheduled})",
                self.achieved_rate, self.sent
            ),
        );
        row("ack rate", format!("{:.1} acks/s", self.ack_rate));
        row(
            "ok (2xx)",
            format!("{}  (duplicates {})", self.ok, self.duplicates),
        );
        row("non-2xx", counts(&self.non_2xx));
        row("errors", counts(&self.errors));
        row(
            "warmup",
            format!("{} 2xx, {} other", self.warmup_ok, self.warmup_not_ok),
        );
        row("latency ms", percentiles(&self.latency_us));
        if let Some(lag) = &self.send_lag_us {
            row("send lag ms", percentiles(lag));
        }
        row(
            "bytes sent",
            format!(
                "{:.1} MB  (mean body {:.0} B; table mean {:.0} B, {} of {} large)",
                self.bytes_sent as f64 / 1e6,
                self.mean_body_bytes,
                self.body_sizes.table.mean,
                self.body_sizes.table.large,
                self.body_sizes.table.entries
            ),
        );
        if let (Some(cpu), Some(pct)) = (self.generator_cpu_s, self.generator_cpu_percent) {
            row(
                "generator cpu",
                format!("{cpu:.2} s  ({pct:.1} % of one core over the run)"),
            );
        }
        out
    }
}

fn counts(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    map.iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn percentiles(p: &Percentiles) -> String {
    let ms = |us: u64| us as f64 / 1000.0;
    format!(
        "p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}  (n={}, mean {:.3})",
        ms(p.p50),
        ms(p.p90),
        ms(p.p99),
        ms(p.p99_9),
        ms(p.max),
        p.count,
        p.mean / 1000.0
    )
}
