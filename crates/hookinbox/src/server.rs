//! The HTTP/1.1 server loop: hyper with bounded request heads, a header read
//! timeout (slow-loris protection), a cap on open connections and graceful
//! shutdown. Taking a bound listener lets tests and embedders run the
//! service on port 0. Both listeners (public and admin) run through here,
//! each with its own limits.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1::Builder as Http1Builder;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::tls_listener::TlsListener;

/// Limits on what one connection may send before the router sees it.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    pub max_headers: usize,
    pub max_header_bytes: usize,
    /// Time for a request head to arrive. hyper starts it when a connection
    /// opens and again each time a keep-alive connection goes idle, so it is
    /// also the idle timeout.
    pub header_read_timeout: Duration,
    /// Connections open at once. Past it the loop stops accepting, so further
    /// connections wait in the kernel's backlog and hold no file descriptor.
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `shutdown` resolves, then stops
/// accepting and gives in-flight requests up to `grace` to finish. With
/// `tls`, each connection first completes a TLS handshake in its own task.
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
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(
        limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
    ));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            (slot, accepted) = accept_in_slot(&listener, &slots) => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        // Typically EMFILE: back off instead of spinning.
                        tracing::warn!(message = "Accept failed.", %error);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let connection = serve_connection(http.clone(), stream, router.clone(), tls.clone(), graceful.watcher());
                tokio::spawn(async move {
                    let _slot = slot;
                    connection.await;
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(grace) => {
            tracing::warn!(message = "Shutdown grace period over; closing remaining connections.");
        }
    }
}

/// One connection: its TLS handshake when `tls` is set, then HTTP/1.1
/// until it closes, watched for graceful shutdown.
async fn serve_connection(
    http: Http1Builder,
    stream: TcpStream,
    router: Router,
    tls: Option<TlsListener>,
    watcher: Watcher,
) {
    let service = TowerToHyperService::new(router);
    let served = match tls {
        None => {
            let connection = http.serve_connection(TokioIo::new(stream), service);
            watcher.watch(connection).await
        }
        Some(tls) => match tls.handshake(stream).await {
            Ok(stream) => {
                let connection = http.serve_connection(TokioIo::new(stream), service);
                watcher.watch(connection).await
            }
            Err(error) => {
                tracing::debug!(message = "TLS handshake failed.", %error);
                return;
            }
        },
    };
    if let Err(error) = served {
        tracing::debug!(message = "Connection ended with an error.", %error);
    }
}

/// Waits for a free connection slot, then for a connection to fill it.
async fn accept_in_slot(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
) -> (
    Option<tokio::sync::OwnedSemaphorePermit>,
    std::io::Result<(TcpStream, std::net::SocketAddr)>,
) {
    // The semaphore is never closed, so this only fails if it were.
    let slot = Arc::clone(slots).acquire_owned().await.ok();
    (slot, listener.accept().await)
}

/// Resolves on Ctrl-C or SIGTERM.
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
