//! `hookinbox keys rewrap`: the encryption key ring. It reseals every
//! record that is not under the active key (rows from an older key, and
//! plaintext ones from before encryption) under it, one short transaction
//! per batch, so it is safe while `serve` and `work` run. After it, the
//! older keys can be removed from the configuration.

use std::path::Path;
use std::time::Duration;

use anyhow::bail;

use super::progress::Progress;
use crate::{config, storage};

/// Batches in a row that may reseal nothing while records remain (on
/// PostgreSQL, rows locked by other transactions are skipped) before the
/// command gives up.
const STALLED_BATCHES: u32 = 50;

/// `keys rewrap`: loops `rewrap_batch` until every record is under the
/// active key.
pub async fn rewrap(config_path: &Path, batch: usize) -> anyhow::Result<()> {
    let settings = config::load(config_path)?;
    let Some(active) = settings.encryption.active.clone() else {
        bail!("encryption: no [[encryption.key]] is configured: there is no key to rewrap to");
    };
    let store = storage::open(&settings.storage, &settings.encryption)
        .await?
        .maintenance();
    let progress = Progress::on_stderr();
    let mut total = 0u64;
    let mut stalled = 0;
    loop {
        let step = store.rewrap_batch(batch).await?;
        total += step.rewrapped;
        progress.counts(
            total,
            total + step.remaining,
            format_args!("rewrapped {total} records to key {active}"),
        );
        if step.is_done() {
            break;
        }
        if step.rewrapped == 0 {
            stalled += 1;
            if stalled >= STALLED_BATCHES {
                bail!(
                    "rewrapped {total} records to key {active}, but {} could not be resealed \
                     (held by other transactions): run it again",
                    step.remaining
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        } else {
            stalled = 0;
        }
    }
    progress.finish(format_args!("rewrapped {total} records to key {active}"));
    Ok(())
}
