//! `hookinbox reconcile`: one reconciliation pass now (see `reconcile`),
//! as `serve` runs every `reconcile.interval`. Without `--fix` it only
//! looks and reports; with it, it repairs what is safe. Safe while the
//! service runs: every repair is guarded, and each is one short write.
//!
//! Stdout: one line per kind (`expired_leases 2 repaired 2`), one per
//! provider source, one per item left as it is; or, with `--json`, the
//! report. The exit status is 1 when something is left to do (found and
//! not repaired), so a script can alert on it.

use std::io::Write;
use std::path::Path;

use super::progress::Progress;
use crate::reconcile::pass::Step;
use crate::reconcile::report::Found;
use crate::reconcile::sources::Sources;
use crate::reconcile::{Reconciler, Report};
use crate::{clock, config, endpoint, storage};

/// Runs one pass; `Ok(false)` when it left something to do.
pub async fn run(
    config_path: &Path,
    fix: bool,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<bool> {
    let settings = config::load(config_path)?;
    let endpoints = endpoint::build_all(&settings)?;
    let sources = Sources::build(&settings)?;
    let store = storage::open(&settings.storage, &settings.encryption).await?;
    let reconciler = Reconciler::new(store.reconciliation(), &settings, endpoints, sources);
    let progress = Progress::on_stderr();
    let report = reconciler
        .run(fix, clock::unix_millis(), |step| match step {
            Step::Drift => progress.update(format_args!("looking for drift in the store")),
            Step::Listing { endpoint, listed } => {
                progress.update(format_args!("{endpoint}: {listed} events listed"))
            }
            Step::Storing { endpoint, done, of } => progress.counts(
                done as u64,
                of as u64,
                format_args!("{endpoint}: storing missing events"),
            ),
        })
        .await?;
    progress.finish(format_args!("{}", report.summary()));
    if json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        write_report(out, &report)?;
    }
    out.flush()?;
    let left = report.counts().unrepaired.iter().sum::<u64>();
    Ok(left == 0)
}

fn write_report(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    let kind = |out: &mut dyn Write, name: &str, found: Found| {
        if report.fix {
            writeln!(out, "{name} {} repaired {}", found.found, found.repaired)
        } else {
            writeln!(out, "{name} {}", found.found)
        }
    };
    kind(out, "expired_leases", report.expired_leases)?;
    kind(out, "stale_statuses", report.stale_statuses)?;
    kind(out, "missing_deliveries", report.missing_deliveries)?;
    for provider in &report.providers {
        writeln!(
            out,
            "provider {} listed {} ignored {} unreadable {} missing {} stored {}",
            provider.endpoint,
            provider.listed,
            provider.ignored,
            provider.unreadable,
            provider.missing,
            provider.stored
        )?;
    }
    for item in &report.unrepaired {
        writeln!(
            out,
            "unrepaired {} {} {}/{}: {}",
            item.kind, item.inbox_id, item.endpoint, item.target, item.reason
        )?;
    }
    Ok(())
}
