//! The admin listener (docs/architecture.md §7): `/metrics` (Prometheus), `/readyz`,
//! `/healthz` and the key rings (`/admin/keys…`, [`keys`]), on its own address so the public port serves only webhooks.
//!
//! It is served by the same loop as the public listener
//! ([`crate::server::serve`]) with limits of its own: a short header/idle
//! timeout and a small connection cap, so idle connections to it cannot eat
//! the process's file descriptors. Every request passes the `Host` check
//! ([`host_allowlist`]); with a token configured every request except
//! `/healthz` needs `Authorization: Bearer …` ([`token`]).

pub mod ack_latency;
pub mod api;
pub mod cross_site;
pub mod dashboard;
pub mod free_disk;
pub mod host_allowlist;
pub mod keys;
#[cfg(test)]
mod operator_tests;
pub mod readiness;
pub mod token;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use hookinbox_store::{Store, StoreReads};

use api::ApiError;
use cross_site::CrossSite;

use crate::config::{self, ConfigError};
use crate::error::Error;
use crate::secrets::key_reload::KeyReloader;
use crate::server::{self, HttpLimits};
use crate::telemetry::{CommitQueueDepth, MetricsHandle};
use host_allowlist::HostAllowlist;
pub use readiness::Readiness;
use token::AdminToken;

/// Header fields an admin request may carry: scrapers and curl send a handful.
const MAX_HEADERS: usize = 32;
/// Bytes of an admin request head (hyper's smallest read buffer).
const MAX_HEADER_BYTES: usize = 8 * 1024;
/// How long admin requests in flight may take to finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The admin listener, built from its settings before anything is opened,
/// so a token that cannot be read stops start-up first.
#[derive(Debug)]
pub struct AdminSettings {
    listen: SocketAddr,
    token: Option<AdminToken>,
    hosts: HostAllowlist,
    limits: HttpLimits,
}

impl AdminSettings {
    /// Reads the token and sets the limits.
    pub fn build(settings: &config::Admin) -> Result<AdminSettings, ConfigError> {
        Ok(AdminSettings {
            listen: settings.listen,
            token: settings.token.as_ref().map(AdminToken::read).transpose()?,
            hosts: HostAllowlist::new(settings.listen.port(), &settings.allowed_hosts),
            limits: HttpLimits {
                listener: "admin",
                max_headers: MAX_HEADERS,
                max_header_bytes: MAX_HEADER_BYTES,
                header_read_timeout: settings.header_read_timeout,
                max_connections: settings.max_connections.get(),
                // Scrapers and probes ask a handful of times per connection.
                max_requests_per_connection: 10_000,
            },
        })
    }
}

#[derive(Clone)]
struct Admin {
    metrics: Option<MetricsHandle>,
    /// For the gauges read at scrape time (the commit queue's depth).
    store: Arc<dyn Store>,
    readiness: Arc<Readiness>,
    token: Option<AdminToken>,
    hosts: Arc<HostAllowlist>,
    keys: Option<Arc<KeyReloader>>,
}

impl axum::extract::FromRef<Admin> for Option<Arc<KeyReloader>> {
    fn from_ref(admin: &Admin) -> Self {
        admin.keys.clone()
    }
}

/// The admin router: routes behind the `Host` check and the token.
/// `readiness` holds the checks of `/readyz` (built by the service, which
/// knows its workers and its disk). The admin API and the dashboard need
/// `reads` (a process given its store by an embedder has none to offer).
pub fn router(
    metrics: Option<MetricsHandle>,
    store: Arc<dyn Store>,
    readiness: Arc<Readiness>,
    reads: Option<Arc<dyn StoreReads>>,
    token: Option<AdminToken>,
    hosts: HostAllowlist,
    keys: Option<Arc<KeyReloader>>,
) -> Router {
    let operator = reads.map(|reads| api::Operator {
        store: Arc::clone(&store),
        reads,
        keys: keys.clone(),
        metrics: metrics.clone(),
    });
    let admin = Admin {
        metrics,
        store,
        readiness,
        token,
        hosts: Arc::new(hosts),
        keys,
    };
    let operator_routes = match operator {
        Some(operator) => {
            api::router(operator.clone()).merge(dashboard::router(dashboard::Dashboard {
                operator,
                token: admin.token.clone(),
                sessions: Arc::new(dashboard::session::Sessions::for_port(admin.hosts.port())),
            }))
        }
        None => Router::new(),
    };
    Router::new()
        .route("/metrics", get(render_metrics))
        .route("/admin/keys", get(keys::status))
        .route("/admin/keys/reload", post(keys::reload))
        .route("/readyz", get(ready))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(admin.clone())
        .merge(operator_routes)
        .fallback(|| async { ApiError::NotFound("no such route on the admin listener") })
        .method_not_allowed_fallback(|| async { ApiError::Method })
        .layer(middleware::from_fn_with_state(admin, guard))
}

/// The `Host` check, then the cross-site check of a request that changes
/// something, then the token (except for `/healthz`, which says only that
/// the process is alive and must be probeable without credentials, and the
/// dashboard, which signs browsers in with a session of its own).
async fn guard(State(admin): State<Admin>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok());
    if !host.is_some_and(|host| admin.hosts.admits(host)) {
        return ApiError::HostNotAllowed.into_response();
    }
    let path = request.uri().path();
    let page = dashboard::serves(path);
    if let Err(refusal) = cross_site::check(request.method(), request.headers(), !page) {
        return match (page, refusal) {
            (true, CrossSite::ForeignOrigin) => dashboard::PageError::Csrf.into_response(),
            _ => ApiError::CrossSite(refusal).into_response(),
        };
    }
    if let Some(token) = &admin.token {
        let open = path == "/healthz" || page;
        if !open && !token.admits(request.headers().get(header::AUTHORIZATION)) {
            return ApiError::Unauthorized.into_response();
        }
    }
    next.run(request).await
}

async fn render_metrics(State(admin): State<Admin>) -> Response {
    if let Some(depth) = admin.store.commit_queue_depth() {
        CommitQueueDepth(depth).emit();
    }
    match &admin.metrics {
        Some(handle) => (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            handle.render(),
        )
            .into_response(),
        None => ApiError::NotFound("metrics recorder not installed").into_response(),
    }
}

async fn ready(State(admin): State<Admin>) -> Response {
    admin.readiness.check().await.into_response()
}

/// Binds and serves the admin listener in the background until `shutdown`
/// turns true; returns its address.
pub async fn spawn(
    settings: AdminSettings,
    metrics: Option<MetricsHandle>,
    store: Arc<dyn Store>,
    readiness: Arc<Readiness>,
    reads: Option<Arc<dyn StoreReads>>,
    keys: Option<Arc<KeyReloader>>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<SocketAddr, Error> {
    let cannot_listen = |source| Error::AdminListen {
        address: settings.listen,
        source,
    };
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .map_err(cannot_listen)?;
    let address = listener.local_addr().map_err(cannot_listen)?;
    let hosts = settings.hosts.at_port(address.port());
    let app = router(
        metrics,
        store,
        readiness,
        reads,
        settings.token,
        hosts,
        keys,
    );
    tokio::spawn(async move {
        let stop = async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
        };
        server::serve(listener, app, settings.limits, None, stop, SHUTDOWN_GRACE).await;
    });
    Ok(address)
}
