//! The public listener: the ingress router over the store, behind the
//! server loop with the configured HTTP limits (and TLS when configured).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hookinbox_store::Store;
use tokio::net::TcpListener;

use crate::app_state::AppState;
use crate::config;
use crate::endpoint::Endpoints;
use crate::ingress;
use crate::server::{self, HttpLimits};
use crate::tls::listener::TlsListener;

/// What the public listener serves with.
pub(super) struct PublicListener<'a> {
    pub endpoints: Endpoints,
    pub store: Arc<dyn Store>,
    pub settings: &'a config::Server,
    /// A commit that takes longer is answered 503.
    pub commit_timeout: Duration,
    pub tls: Option<TlsListener>,
}

impl PublicListener<'_> {
    /// Serves `listener` until `shutdown` completes and the grace period
    /// for requests in flight has passed.
    pub async fn serve(self, listener: TcpListener, shutdown: impl Future<Output = ()> + Send) {
        let settings = self.settings;
        let state = AppState::new(self.endpoints, self.store, settings, self.commit_timeout);
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
            self.tls,
            shutdown,
            settings.shutdown_grace,
        )
        .await;
    }
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
