//! The HTTP/1.1 server loop: hyper with bounded request heads, a header read
//! timeout (slow-loris protection) and graceful shutdown. Taking a bound
//! listener lets tests and embedders run the service on port 0.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

/// Limits on what one connection may send before the router sees it.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    pub max_headers: usize,
    pub max_header_bytes: usize,
    pub header_read_timeout: Duration,
}

/// Serves `router` on `listener` until `shutdown` resolves, then stops
/// accepting and gives in-flight requests up to `grace` to finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .keep_alive(true)
        .max_headers(limits.max_headers)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .header_read_timeout(limits.header_read_timeout);
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
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
                let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router.clone()));
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    if let Err(error) = connection.await {
                        tracing::debug!(message = "Connection ended with an error.", %error);
                    }
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
