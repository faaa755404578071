//! Retention at run time (docs/architecture.md §4): the store's [`RetentionPolicy`]
//! from `[retention]`, and the purge task of `serve`.
//!
//! The dedup rule is never shorter than the longest redelivery window of
//! the configured endpoints' providers (each adapter states its own): a
//! dedup record deleted while the provider may still redeliver the event
//! would turn that redelivery into a second event. The store purges across
//! all endpoints at once, so the maximum over them is what applies.
//!
//! Only `serve` runs the purge task (not `work`, nor an embedder's given
//! store): one place to look for its log lines. Batches are short
//! transactions that skip events with a pending delivery, so several
//! `serve` processes on one database purging at once is safe; each batch
//! removes what is due when it runs.

use std::sync::Arc;
use std::time::Duration;

use hookinbox_store::{Maintenance, RetentionPolicy, StoreError};
use hookinbox_verify::adapter_for;
use tokio::sync::watch;

use crate::config::Settings;
use crate::periodic::{spawn_every, FirstRun};
use crate::telemetry::Purged;

/// The longest redelivery window among the configured endpoints' providers.
pub fn longest_redelivery_window(settings: &Settings) -> Duration {
    settings
        .endpoints
        .iter()
        .filter_map(|endpoint| adapter_for(endpoint.provider, &endpoint.adapter_settings()).ok())
        .map(|adapter| Duration::from_secs(adapter.redelivery_window_seconds()))
        .max()
        .unwrap_or_default()
}

/// The rules as the store applies them: `[retention]`, with `dedup`
/// raised to the longest redelivery window.
pub fn policy(settings: &Settings) -> RetentionPolicy {
    settings
        .retention
        .policy(longest_redelivery_window(settings))
}

/// How a purge shares the store with ingress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Batch after batch (`hookinbox purge`: the operator asked for it now).
    Unpaced,
    /// `serve`'s purge task: after each batch it rests [`REST_PER_BATCH_TIME`]
    /// times as long as the batch took (at least [`MIN_REST`]). On SQLite a
    /// batch is one op of the writer's group commit (itself cut short after
    /// about 1 ms of work), so the accepts that share its transaction
    /// wait for it; resting leaves the writer to ingress most of the time
    /// however large the backlog (docs/architecture.md §4, Retention:
    /// purges never hold up ingress), and a slow batch (a busy disk) makes a longer rest.
    Background,
}

/// The purge task rests this many times as long as each batch took.
pub const REST_PER_BATCH_TIME: u32 = 4;
/// The shortest rest between two batches of the purge task.
pub const MIN_REST: Duration = Duration::from_millis(5);

/// Purges everything due at `now_ms`, batch after batch at `pace`, calling
/// `on_batch` with the running totals after each.
pub async fn purge_all(
    store: &dyn Maintenance,
    policy: &RetentionPolicy,
    now_ms: i64,
    batch: usize,
    pace: Pace,
    mut on_batch: impl FnMut(&Purged),
) -> Result<Purged, StoreError> {
    let mut total = Purged::default();
    loop {
        let started = std::time::Instant::now();
        let progress = store.purge_batch(policy, now_ms, batch).await?;
        total.add(&progress.purged, progress.segments_deleted);
        on_batch(&total);
        // Nothing purged while something is still due: what is left is
        // held by another process's transaction; the next run takes it.
        if progress.is_done() || progress.purged.is_empty() {
            return Ok(total);
        }
        if pace == Pace::Background {
            tokio::time::sleep((started.elapsed() * REST_PER_BATCH_TIME).max(MIN_REST)).await;
        }
    }
}

/// Runs a purge every `[retention] purge_interval` until `stopping`; off
/// when no rule is set.
pub fn spawn_purge_task(
    store: Arc<dyn Maintenance>,
    settings: &Settings,
    stopping: watch::Receiver<bool>,
) {
    if !settings.retention.is_on() {
        return;
    }
    let policy = policy(settings);
    let batch = settings.retention.batch.get();
    spawn_every(
        settings.retention.purge_interval,
        FirstRun::Now,
        stopping,
        move || {
            let store = Arc::clone(&store);
            async move {
                let now_ms = crate::clock::unix_millis();
                match purge_all(
                    store.as_ref(),
                    &policy,
                    now_ms,
                    batch,
                    Pace::Background,
                    |_| {},
                )
                .await
                {
                    Ok(purged) => purged.emit(),
                    Err(error) => tracing::warn!(
                        message = "Retention purge failed; retrying at the next interval.",
                        error = %error,
                    ),
                }
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn dedup_is_never_shorter_than_the_longest_redelivery_window() {
        let text = r#"
            [retention]
            raw_payload = "1d"
            dedup = "1h"

            [[endpoint]]
            id = "lab"
            provider = "lab"
            [[endpoint.secret]]
            version = "1"
            value = "s"

            [[endpoint]]
            id = "stripe"
            provider = "stripe"
            [[endpoint.secret]]
            version = "1"
            value = "whsec_x"
        "#;
        let settings = crate::config::parse(text, Path::new("/")).unwrap();
        let window = longest_redelivery_window(&settings);
        assert!(window > Duration::from_secs(3600), "{window:?}");
        let policy = policy(&settings);
        assert_eq!(policy.dedup, Some(window));
        assert_eq!(policy.raw_payload, Some(Duration::from_secs(86_400)));
        assert_eq!(policy.dead_deliveries, None);
    }
}
