//! `hookinbox serve`

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::app_state::AppState;
use crate::config::{self, ConfigError, Settings};
use crate::delivery::HandlerRegistry;
use crate::endpoint::Endpoints;
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
    let settings = config::load(config_path)?;
    let Built {
        endpoints,
        admin: admin_settings,
        tls,
    } = build(&settings)?;
    for endpoint in &settings.endpoints {
        log_endpoint(endpoint);
    }
    let sqlite = storage::open(&settings.storage)?;
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
            &settings.delivery,
            handlers,
            shutdown.clone(),
        )?)
    } else {
        None
    };
    let address = listen.unwrap_or(settings.server.listen);
    let listener = server::bind(address, settings.server.listen_backlog.get())
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
        storage = %settings.storage.sqlite_path.display()
    );

    serve_ingress(
        listener,
        endpoints,
        store,
        &settings.server,
        settings.storage.commit_timeout,
        tls,
        stop_signal,
    )
    .await;
    tracing::info!(message = "Stopped accepting; finishing deliveries in flight.");
    let _ = stop_workers.send(true);
    if let Some(mut delivery) = delivery {
        let _ = tokio::time::timeout(settings.server.shutdown_grace, async {
            while delivery.join_next().await.is_some() {}
        })
        .await;
    }
    Ok(())
}

/// What `serve` builds from its settings before it opens the store or a
/// socket: everything a configuration can be wrong about beyond its text
/// (secrets that cannot be read, keys a provider cannot use, certificate
/// and CA files). `hookinbox config check` builds it too.
pub struct Built {
    pub endpoints: Endpoints,
    pub admin: Option<admin::AdminSettings>,
    pub tls: Option<TlsListener>,
}

pub fn build(settings: &Settings) -> Result<Built, ConfigError> {
    Ok(Built {
        endpoints: endpoint::build_all(settings)?,
        admin: settings
            .admin
            .as_ref()
            .map(admin::AdminSettings::build)
            .transpose()?,
        tls: settings
            .server
            .tls
            .as_ref()
            .map(TlsListener::build)
            .transpose()?,
    })
}

/// One line per endpoint at start-up, so an operator sees what is served
/// where and what it delivers to (secret versions by name only).
fn log_endpoint(endpoint: &config::Endpoint) {
    let versions: Vec<&str> = endpoint
        .secrets
        .iter()
        .map(|secret| secret.version.as_str())
        .collect();
    let targets: Vec<String> = endpoint
        .targets
        .iter()
        .map(|target| format!("{} ({})", target.name, target.kind.name()))
        .collect();
    tracing::info!(
        message = "Endpoint ready.",
        path = %format!("/hooks/{}", endpoint.id),
        provider = %endpoint.provider,
        secret_versions = %versions.join(", "),
        targets = %if targets.is_empty() { "none".to_owned() } else { targets.join(", ") }
    );
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
    settings: &config::Server,
    commit_timeout: Duration,
    tls: Option<TlsListener>,
    stop_signal: impl std::future::Future<Output = ()> + Send,
) {
    let state = AppState::new(endpoints, store, settings, commit_timeout);
    let limits = HttpLimits {
        listener: "public",
        max_headers: settings.max_headers.get(),
        max_header_bytes: settings.max_header_bytes,
        header_read_timeout: settings.header_read_timeout,
        max_connections: connection_cap(settings.max_connections.get()),
        max_requests_per_connection: settings.max_requests_per_connection.get(),
    };
    server::serve(
        listener,
        ingress::router(state),
        limits,
        tls,
        stop_signal,
        settings.shutdown_grace,
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
