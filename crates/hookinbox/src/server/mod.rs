//! The HTTP/1.1 server loop, shared by the public and the admin listener,
//! each with its own limits: hyper with bounded request heads, a header
//! read timeout that also ends idle keep-alive connections (hyper re-arms it
//! while it waits for the next request), a cap on open connections, a cap
//! on requests per connection, optional TLS (the handshake runs in the
//! connection's own task, under its own deadline), and graceful shutdown.
//! Taking a bound listener lets tests and embedders run the service on
//! port 0.
//!
//! Every accepted connection holds a slot ([`ConnectionSlots`]); when a
//! connection arrives at the cap, the loop stops accepting (the next ones
//! wait in the listen backlog) and asks the least recently active idle
//! connections to close, so a flood of idle connections cannot keep a
//! provider's request out.

mod connection_slots;
mod listener;
mod per_connection;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1::Builder as Http1Builder;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;

use crate::tls::listener::TlsListener;

pub use connection_slots::ConnectionSlots;
pub use listener::{bind, raise_open_file_limit};
use per_connection::PerConnection;

/// Limits on what one connection may send before the router sees it, and
/// on how many connections a listener holds.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// Which listener these are (`public`, `admin`): a metric label.
    pub listener: &'static str,
    pub max_headers: usize,
    pub max_header_bytes: usize,
    /// Time to receive a request head; also how long an idle keep-alive
    /// connection is kept.
    pub header_read_timeout: Duration,
    /// Connections open at once; past it, new ones wait in the backlog while
    /// idle ones are asked to close.
    pub max_connections: usize,
    /// Requests served on one connection before it is closed
    /// (`Connection: close` on the last answer).
    pub max_requests_per_connection: u32,
}

/// Serves `router` on `listener` until `shutdown` resolves, then stops
/// accepting and gives in-flight requests up to `grace` to finish. With
/// `tls`, each connection first completes a TLS handshake.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    tls: Option<TlsListener>,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let mut http = Http1Builder::new();
    http.timer(TokioTimer::new())
        .keep_alive(true)
        .max_headers(limits.max_headers)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .header_read_timeout(limits.header_read_timeout);
    let slots = Arc::new(ConnectionSlots::new(
        limits.max_connections,
        limits.listener,
    ));
    let (stop_connections, stopping) = tokio::sync::watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Typically EMFILE: back off instead of spinning.
                    tracing::warn!(message = "Accept failed.", %error);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // At the cap this waits (holding just this one connection) while
        // idle connections are asked to close; the next ones wait in the
        // backlog, since nothing accepts meanwhile.
        let slot = tokio::select! {
            slot = slots.acquire() => slot,
            () = &mut shutdown => break,
        };
        let service = PerConnection::new(
            router.clone(),
            peer,
            slot.activity(),
            limits.max_requests_per_connection,
        );
        let http = http.clone();
        let stopping = stopping.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            match tls {
                None => serve_connection(&http, stream, service, &slot, stopping).await,
                Some(tls) => match tls.handshake(stream).await {
                    Ok(stream) => serve_connection(&http, stream, service, &slot, stopping).await,
                    Err(error) => tracing::debug!(message = "TLS handshake failed.", %error),
                },
            }
            drop(slot);
        });
    }
    drop(listener);
    let _ = stop_connections.send(true);
    if tokio::time::timeout(grace, slots.all_closed())
        .await
        .is_err()
    {
        tracing::warn!(message = "Shutdown grace period over; closing remaining connections.");
    }
}

/// Runs one connection to its end. Shutdown, or a request for the slot from
/// the accept loop, turns into hyper's graceful shutdown: an idle connection
/// closes at once, a busy one after its current answer.
async fn serve_connection<S>(
    http: &Http1Builder,
    stream: S,
    service: PerConnection,
    slot: &connection_slots::Slot,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let connection = http.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let stop = stopping.wait_for(|stop| *stop);
    tokio::pin!(stop);
    let mut closing = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(message = "Connection ended with an error.", %error);
                }
                return;
            }
            _ = &mut stop, if !closing => {
                connection.as_mut().graceful_shutdown();
                closing = true;
            }
            () = slot.close_requested(), if !closing => {
                connection.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    }
}

/// The peer address of the connection a request arrived on, as a request
/// extension (absent when a test drives the router without a socket).
pub fn peer_address(request: &axum::http::request::Parts) -> Option<SocketAddr> {
    request
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|info| info.0)
}

/// Resolves on Ctrl-C or SIGTERM: the shutdown future of `hookinbox serve`
/// and `work`, for [`Service::run_until`](crate::Service::run_until).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
