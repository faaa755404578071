//! `hookinbox serve`

use std::io::Write;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::app_state::AppState;
use crate::config::{Config, ServerConfig};
use crate::delivery::HandlerRegistry;
use crate::endpoint::Endpoints;
use crate::ingress::body::Linger;
use crate::ingress::body_budget::BodyBudget;
use crate::ingress::body_pace::BodyPace;
use crate::ingress::client_address::TrustedProxies;
use crate::ingress::client_refusals::ClientRefusals;
use crate::server::{self, HttpLimits};
use crate::tls_listener::TlsListener;
use crate::{admin, delivery, endpoint, ingress, storage, telemetry};
use hookinbox_store::Store;

pub async fn run(
    config_path: &Path,
    listen: Option<SocketAddr>,
    workers: bool,
) -> anyhow::Result<()> {
    run_with_handlers(
        config_path,
        listen,
        workers,
        &HandlerRegistry::new(),
        server::shutdown_signal(),
    )
    .await
}

/// `serve` for a program that embeds hookinbox: its `handler` targets run
/// the handlers registered in `handlers`. Once `stop_signal` completes (for
/// the binary: SIGTERM or Ctrl-C) it stops accepting, lets in-flight
/// requests and deliveries finish within the grace period, and returns.
pub async fn run_with_handlers(
    config_path: &Path,
    listen: Option<SocketAddr>,
    workers: bool,
    handlers: &HandlerRegistry,
    stop_signal: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let config = Config::load(config_path)?;
    let endpoints = endpoint::build_all(&config)?;
    let admin_settings = config
        .admin
        .as_ref()
        .map(admin::AdminSettings::from_config)
        .transpose()?;
    let tls = config
        .server
        .tls
        .as_ref()
        .map(|tls| TlsListener::from_config(tls, &config.base_dir))
        .transpose()?;
    let sqlite = storage::open(&config)?;
    let store: Arc<dyn Store> = sqlite.clone();
    let metrics = telemetry::install();
    let (stop_workers, shutdown) = tokio::sync::watch::channel(false);
    if let Some(admin_settings) = admin_settings {
        let admin_address = admin::spawn(
            admin_settings,
            metrics,
            Arc::clone(&store),
            shutdown.clone(),
        )
        .await?;
        tracing::info!(message = "Admin listener up.", address = %admin_address);
    }
    // Before the listener: a handler target without a handler stops start-up.
    let delivery = if workers {
        Some(delivery::spawn(
            Arc::clone(&sqlite),
            &endpoints,
            &config.delivery,
            handlers,
            shutdown.clone(),
        )?)
    } else {
        None
    };
    let address = listen.unwrap_or(config.server.listen);
    let listener = server::bind(address, config.server.listen_backlog)
        .with_context(|| format!("cannot listen on {address}"))?;
    let bound = listener.local_addr()?;
    if let Some(tls) = &tls {
        // Before the announcement: from then on a SIGHUP reloads, never kills.
        tls.reload_on_sighup()
            .context("installing the SIGHUP handler for TLS reloads")?;
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    announce_url(&format!("{scheme}://{bound}"))?;
    tracing::info!(
        message = "Serving.",
        address = %bound,
        tls = tls.is_some(),
        endpoints = endpoints.len(),
        storage = %config.storage.url
    );

    serve_ingress(
        listener,
        endpoints,
        store,
        &config.server,
        config.storage.commit_timeout,
        tls,
        stop_signal,
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

/// The one line on stdout: scripts and tests read the bound address from it.
pub fn announce(bound: SocketAddr) -> std::io::Result<()> {
    announce_url(&format!("http://{bound}"))
}

/// A stdout its reader has already closed is no reason to stop: serving is
/// what was asked for, and the log line still gives the address.
fn announce_url(url: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "hookinbox listening on {url}").and_then(|()| stdout.flush()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
            tracing::warn!(message = "Stdout is closed; the address was not printed there.", %url);
            Ok(())
        }
        written => written,
    }
}

/// The public listener: the ingress router over `store`, with the
/// configured HTTP limits (and TLS when `tls` is given), until
/// `stop_signal` completes and the grace period for in-flight requests has
/// passed; a commit that takes longer than `commit_timeout` is answered
/// 503. The benchmark baseline runs the same function with a store that
/// keeps nothing.
pub async fn serve_ingress(
    listener: TcpListener,
    endpoints: Endpoints,
    store: Arc<dyn Store>,
    config: &ServerConfig,
    commit_timeout: Duration,
    tls: Option<TlsListener>,
    stop_signal: impl std::future::Future<Output = ()> + Send,
) {
    let state = AppState {
        endpoints: Arc::new(endpoints),
        store,
        bodies: BodyBudget::new(config.max_inflight_body_bytes),
        body_pace: BodyPace {
            grace: Duration::from_millis(config.body_rate_grace_ms),
            min_bytes_per_second: config.min_body_bytes_per_second,
            max_duration: Duration::from_millis(config.body_read_timeout_ms),
        },
        linger: Linger {
            timeout: Duration::from_millis(config.linger_timeout_ms),
            max_bytes: config.linger_max_bytes,
        },
        clients: Arc::new(ClientRefusals::new(
            NonZeroU32::new(config.unverified_rate_limit.per_second).unwrap_or(NonZeroU32::MIN),
            NonZeroU32::new(
                config
                    .unverified_rate_limit
                    .burst
                    .unwrap_or(config.unverified_rate_limit.per_second),
            )
            .unwrap_or(NonZeroU32::MIN),
        )),
        // Validated with the configuration.
        trusted_proxies: Arc::new(
            TrustedProxies::parse(&config.trusted_proxies).unwrap_or_default(),
        ),
        refusals: Arc::default(),
        commit_timeout,
        storage_refusals: Arc::default(),
    };
    let limits = HttpLimits {
        listener: "public",
        max_headers: config.max_headers,
        max_header_bytes: config.max_header_bytes,
        header_read_timeout: Duration::from_millis(config.header_read_timeout_ms),
        max_connections: connection_cap(config.max_connections),
        max_requests_per_connection: config.max_requests_per_connection,
    };
    server::serve(
        listener,
        ingress::router(state),
        limits,
        tls,
        stop_signal,
        Duration::from_millis(config.shutdown_grace_ms),
    )
    .await;
}

/// File descriptors kept for everything but public connections: the
/// database and its payload segments, the admin listener, targets, logs.
const RESERVED_FILES: u64 = 1_024;

/// The public listener's connection cap: as configured, unless the
/// open-file limit (raised to its hard limit first) cannot hold it.
fn connection_cap(configured: usize) -> usize {
    let Some(limit) = server::raise_open_file_limit() else {
        return configured;
    };
    let room = limit.saturating_sub(RESERVED_FILES).max(1) as usize;
    if configured > room {
        tracing::warn!(
            message = "server.max_connections is more than the open file limit allows; lowered.",
            configured,
            open_file_limit = limit,
            max_connections = room
        );
        return room;
    }
    configured
}
