//! `hookinbox serve`

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::app_state::AppState;
use crate::config::Config;
use crate::server::{self, HttpLimits};
use crate::{admin, delivery, endpoint, ingress, storage, telemetry};

pub async fn run(
    config_path: &Path,
    listen: Option<SocketAddr>,
    workers: bool,
) -> anyhow::Result<()> {
    let config = Config::load(config_path)?;
    let endpoints = endpoint::build_all(&config)?;
    let store = storage::open(&config)?;
    let metrics = telemetry::install();
    let (stop_workers, shutdown) = tokio::sync::watch::channel(false);
    if let Some(admin_config) = &config.admin {
        let admin_address =
            admin::spawn(admin_config, metrics, Arc::clone(&store), shutdown.clone()).await?;
        tracing::info!(message = "Admin listener up.", address = %admin_address);
    }
    let address = listen.unwrap_or(config.server.listen);
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let bound = listener.local_addr()?;
    // The one line on stdout: scripts and tests read the bound address from it.
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "hookinbox listening on http://{bound}")?;
    stdout.flush()?;
    drop(stdout);
    tracing::info!(
        message = "Serving.",
        address = %bound,
        endpoints = endpoints.len(),
        storage = %config.storage.url
    );

    let delivery = workers
        .then(|| delivery::spawn(Arc::clone(&store), &endpoints, &config.delivery, shutdown));
    let state = AppState {
        endpoints: Arc::new(endpoints),
        store,
        body_read_timeout: Duration::from_millis(config.server.body_read_timeout_ms),
    };
    let limits = HttpLimits {
        max_headers: config.server.max_headers,
        max_header_bytes: config.server.max_header_bytes,
        header_read_timeout: Duration::from_millis(config.server.header_read_timeout_ms),
    };
    server::serve(
        listener,
        ingress::router(state),
        limits,
        server::shutdown_signal(),
        Duration::from_millis(config.server.shutdown_grace_ms),
    )
    .await;
    tracing::info!(message = "Stopped accepting; finishing deliveries in flight.");
    let _ = stop_workers.send(true);
    if let Some(mut delivery) = delivery {
        let grace = Duration::from_millis(config.server.shutdown_grace_ms);
        let _ = tokio::time::timeout(grace, async {
            while delivery.join_next().await.is_some() {}
        })
        .await;
    }
    Ok(())
}
