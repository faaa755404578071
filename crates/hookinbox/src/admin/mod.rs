//! The admin listener (DESIGN.md §7): `/metrics` (Prometheus), `/readyz` and
//! `/healthz`, on its own address so the public port serves only webhooks.
//! With a token configured every request needs `Authorization: Bearer …`,
//! compared in constant time.
//!
//! It is served by the same loop as the public listener
//! ([`crate::server::serve`]) with limits of its own: a short header/idle
//! timeout and a small connection cap, so idle connections to it cannot eat
//! the process's file descriptors.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use hookinbox_store::Store;
use subtle::ConstantTimeEq;

use crate::server::{self, HttpLimits};
use crate::telemetry::MetricsHandle;

/// Header fields an admin request may carry: scrapers and curl send a handful.
const MAX_HEADERS: usize = 32;
/// Bytes of an admin request head (hyper's smallest read buffer).
const MAX_HEADER_BYTES: usize = 8 * 1024;
/// How long admin requests in flight may take to finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

#[derive(Clone)]
struct Admin {
    metrics: Option<MetricsHandle>,
    store: Arc<dyn Store>,
    token: Option<Arc<str>>,
}

/// The admin router.
pub fn router(
    metrics: Option<MetricsHandle>,
    store: Arc<dyn Store>,
    token: Option<String>,
) -> Router {
    let admin = Admin {
        metrics,
        store,
        token: token.map(Arc::from),
    };
    Router::new()
        .route("/metrics", get(render_metrics))
        .route("/readyz", get(ready))
        .route("/healthz", get(|| async { "ok" }))
        .layer(middleware::from_fn_with_state(admin.clone(), require_token))
        .with_state(admin)
}

async fn require_token(State(admin): State<Admin>, request: Request, next: Next) -> Response {
    if let Some(token) = &admin.token {
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        let matches: bool = presented.as_bytes().ct_eq(token.as_bytes()).into();
        if !matches {
            return (StatusCode::UNAUTHORIZED, "admin token required").into_response();
        }
    }
    next.run(request).await
}

async fn render_metrics(State(admin): State<Admin>) -> Response {
    match &admin.metrics {
        Some(handle) => (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            handle.render(),
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "metrics recorder not installed").into_response(),
    }
}

/// Ready when the store answers a read.
async fn ready(State(admin): State<Admin>) -> Response {
    match admin.store.load_event("readiness-probe").await {
        Ok(_) => "ready".into_response(),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response(),
    }
}

/// Binds and serves the admin listener in the background; returns its address.
pub async fn spawn(
    config: &crate::config::AdminConfig,
    metrics: Option<MetricsHandle>,
    store: Arc<dyn Store>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<std::net::SocketAddr> {
    use anyhow::Context;
    let token = match (&config.token, &config.token_env) {
        (Some(token), None) => Some(token.clone()),
        (None, Some(name)) => Some(std::env::var(name).with_context(|| {
            format!("admin.token_env: environment variable `{name}` is not set")
        })?),
        (None, None) => None,
        (Some(_), Some(_)) => anyhow::bail!("admin: set `token` or `token_env`, not both"),
    };
    if config.header_read_timeout_ms == 0 || config.max_connections == 0 {
        anyhow::bail!("admin: header_read_timeout_ms and max_connections must be positive");
    }
    let limits = HttpLimits {
        max_headers: MAX_HEADERS,
        max_header_bytes: MAX_HEADER_BYTES,
        header_read_timeout: Duration::from_millis(config.header_read_timeout_ms),
        max_connections: config.max_connections,
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("admin.listen: cannot listen on {}", config.listen))?;
    let address = listener.local_addr()?;
    let app = router(metrics, store, token);
    tokio::spawn(async move {
        let stop = async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
        };
        server::serve(listener, app, limits, stop, SHUTDOWN_GRACE).await;
    });
    Ok(address)
}
