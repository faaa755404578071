//! `hookinbox purge`: what `serve`'s purge task does, once, now. With
//! `--dry-run` it only counts what is due, rule by rule. Safe while the
//! service runs: each batch is one short transaction.

use std::io::Write;
use std::path::Path;

use super::progress::Progress;
use crate::{clock, config, retention, storage};

/// Purges everything due now under `[retention]`, or with `dry_run` prints
/// the counts to `out`.
pub async fn run(config_path: &Path, dry_run: bool, out: &mut impl Write) -> anyhow::Result<()> {
    let settings = config::load(config_path)?;
    let policy = retention::policy(&settings);
    let store = storage::open(&settings.storage, &settings.encryption)
        .await?
        .maintenance();
    let now_ms = clock::unix_millis();
    if dry_run {
        let due = store.purge_preview(&policy, now_ms).await?;
        writeln!(out, "raw_payloads {}", due.raw_payloads)?;
        writeln!(out, "events {}", due.events)?;
        writeln!(out, "dead_deliveries {}", due.dead_deliveries)?;
        out.flush()?;
        return Ok(());
    }
    let progress = Progress::on_stderr();
    // A batch counts what is left only up to its own size (an exact count
    // after every batch would cost as much as the batch): the bar's total
    // is counted once, before the first.
    let due = store.purge_preview(&policy, now_ms).await?;
    let due = due.raw_payloads + due.events + due.dead_deliveries;
    let purged = retention::purge_all(
        store.as_ref(),
        &policy,
        now_ms,
        settings.retention.batch.get(),
        retention::Pace::Unpaced,
        |total| {
            let done =
                total.counts.raw_payloads + total.counts.events + total.counts.dead_deliveries;
            progress.counts(
                done,
                due.max(done),
                format_args!(
                    "purged {} raw payloads, {} events, {} dead deliveries",
                    total.counts.raw_payloads, total.counts.events, total.counts.dead_deliveries
                ),
            )
        },
    )
    .await?;
    progress.finish(format_args!(
        "purged {} raw payloads, {} events, {} dead deliveries; deleted {} payload segments",
        purged.counts.raw_payloads,
        purged.counts.events,
        purged.counts.dead_deliveries,
        purged.segments_deleted
    ));
    Ok(())
}
