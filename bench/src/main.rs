//! `loadgen`: the hookinbox benchmark's load generator. See `bench/README.md`.
//!
//! The binary is thin: parse flags, draw the body sizes, run one mode on a
//! small tokio runtime, print the report.

mod body_sizes;
mod cli;
mod cpu;
mod event_body;
mod load;
mod open_loop;
mod recorder;
mod report;
mod saturate;
mod sender;
mod signing;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use clap::Parser;

use body_sizes::{BodySizes, SizeSpec};
use cli::Args;
use event_body::EventBodies;
use load::Load;
use recorder::Recorder;
use report::{BodySizeReport, Report, RunFacts};
use sender::Sender;
use signing::Signer;

fn main() -> Result<()> {
    let args = Args::parse();
    args.validate()?;
    let uri: hyper::Uri = args.url.parse().context("--url is not a valid URL")?;
    if uri.scheme_str() != Some("http") || uri.host().is_none() {
        bail!("--url must be an http:// URL with a host (the generator speaks plain HTTP/1.1)");
    }

    let spec = SizeSpec {
        mean: args.body_mean,
        sigma: args.body_sigma,
        large_share: args.large_share,
        large_size: args.large_size,
    };
    let sizes = BodySizes::draw(spec, args.seed)?;
    let table = sizes.summary(spec.large_size);
    println!(
        "body sizes: mean {:.0} B (target {}), p50 {} B, p90 {} B, p99 {} B, {} of {} at {} B",
        table.mean,
        spec.mean,
        table.p50,
        table.p90,
        table.p99,
        table.large,
        table.entries,
        spec.large_size
    );

    let run_id = args.run_id.clone().unwrap_or_else(default_run_id);
    let load = Arc::new(Load {
        sender: Sender::new(
            uri,
            Signer::new(args.scheme, &args.secret)?,
            Duration::from_secs_f64(args.timeout),
        ),
        bodies: EventBodies::new(run_id, sizes, args.seed),
        recorder: Recorder::new(),
    });
    // One thread (the default) needs no work stealing: the current-thread
    // scheduler is the cheapest, and the pacer can still spawn onto it.
    let mut builder = if args.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(args.threads);
        builder
    };
    let runtime = builder
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;

    let cpu_before = cpu::process_seconds();
    let wall = Instant::now();
    let (mode, window_start, scheduled) = match args.rate {
        Some(rate) => {
            let schedule = open_loop::Schedule::new(rate, args.warmup, args.duration);
            println!(
                "open loop: {rate} req/s, {} s warmup + {} s recorded ({} requests)",
                args.warmup,
                args.duration,
                schedule.measured()
            );
            let start =
                runtime.block_on(open_loop::run(load.clone(), schedule, args.max_inflight))?;
            ("open_loop", start, Some(schedule.measured()))
        }
        None => {
            println!(
                "saturate: {} senders, {} s warmup + {} s recorded",
                args.concurrency, args.warmup, args.duration
            );
            let start = runtime.block_on(saturate::run(
                load.clone(),
                args.concurrency,
                Duration::from_secs_f64(args.warmup),
                Duration::from_secs_f64(args.duration),
            ));
            ("saturate", start, None)
        }
    };
    let wall_s = wall.elapsed().as_secs_f64();
    let cpu_s = cpu_before
        .zip(cpu::process_seconds())
        .map(|(before, after)| after - before);
    runtime.shutdown_timeout(Duration::from_secs(1));

    let tally = load.recorder.take();
    let report = Report::new(
        RunFacts {
            mode,
            url: args.url.clone(),
            run_id: load.bodies.run_id().to_owned(),
            target_rate: args.rate,
            concurrency: args.saturate.then_some(args.concurrency),
            warmup_s: args.warmup,
            duration_s: args.duration,
            scheduled,
            window_start,
            body_sizes: BodySizeReport::new(spec, table),
            cpu_s,
            wall_s,
        },
        &tally,
    );
    print!("{}", report.table());
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json + "\n")
            .with_context(|| format!("writing --json {}", path.display()))?;
    }
    Ok(())
}

/// Unix seconds and pid: unique across reruns against the same database.
fn default_run_id() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{secs}-{}", std::process::id())
}
