//! `hookinbox work`: delivery workers without ingress, so the two can scale
//! separately (on SQLite the processes share the file; each commit takes
//! the file's write lock in turn).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

use crate::config;
use crate::delivery::HandlerRegistry;
use crate::{delivery, endpoint, reload, server, storage};

pub async fn run(config_path: &Path) -> anyhow::Result<()> {
    run_with_handlers(
        config_path,
        &HandlerRegistry::new(),
        server::shutdown_signal(),
    )
    .await
}

/// `work` for a program that embeds hookinbox: its `handler` targets run
/// the handlers registered in `handlers`, until `stop_signal` completes (for
/// the binary: SIGTERM or Ctrl-C).
pub async fn run_with_handlers(
    config_path: &Path,
    handlers: &HandlerRegistry,
    stop_signal: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let settings = config::load(config_path)?;
    let endpoints = endpoint::build_all(&settings)?;
    let store = storage::open(&settings.storage)?;
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let mut tasks = delivery::spawn(
        Arc::clone(&store),
        &endpoints,
        &settings.delivery,
        handlers,
        shutdown,
    )?;
    // `systemctl reload` must not stop the workers: nothing of theirs is
    // reloadable yet, but a SIGHUP is answered, not fatal.
    reload::reload_on_sighup(Vec::new()).context("installing the SIGHUP handler")?;
    tracing::info!(
        message = "Delivering.",
        targets = endpoints.values().map(|e| e.targets.len()).sum::<usize>()
    );
    stop_signal.await;
    let _ = stop.send(true);
    let grace = settings.server.shutdown_grace;
    let _ = tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    Ok(())
}
