//! A local app that can go down and come back on the same port: what a
//! developer's app behind `hookinbox listen` does when it restarts. It
//! records every request it received and answers 200; [`LocalApp::stop`]
//! closes the listener and every open connection (requests in flight get
//! no answer), [`LocalApp::start_again`] listens on the same port again.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::net::TcpSocket;
use tokio::task::{JoinHandle, JoinSet};

use crate::sink::Received;

pub struct LocalApp {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    server: Mutex<Option<JoinHandle<()>>>,
}

impl LocalApp {
    /// Up on a port of its own.
    pub async fn start() -> LocalApp {
        let app = LocalApp {
            addr: "127.0.0.1:0".parse().expect("an address"),
            received: Default::default(),
            server: Mutex::new(None),
        };
        let addr = app.listen(app.addr);
        LocalApp { addr, ..app }
    }

    pub fn url(&self) -> String {
        format!("http://{}/webhooks", self.addr)
    }

    /// Down: the port refuses connections, open ones are closed.
    pub async fn stop(&self) {
        let server = self.server.lock().expect("app lock").take();
        if let Some(server) = server {
            server.abort();
            // Dropped with the task: the listener and every connection.
            let _ = server.await;
        }
    }

    /// Up again on the same port.
    pub async fn start_again(&self) {
        self.listen(self.addr);
    }

    /// Every request received so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("app lock").clone()
    }

    fn listen(&self, addr: SocketAddr) -> SocketAddr {
        let socket = TcpSocket::new_v4().expect("a TCP socket");
        socket.set_reuseaddr(true).expect("SO_REUSEADDR");
        socket.bind(addr).expect("bind the app's port");
        let listener = socket.listen(1024).expect("listen");
        let bound = listener.local_addr().expect("the bound address");
        let received = Arc::clone(&self.received);
        let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
            let received = Arc::clone(&received);
            async move {
                let (parts, body) = request.into_parts();
                let body = axum::body::to_bytes(body, 64 << 20)
                    .await
                    .unwrap_or_default();
                received.lock().expect("app lock").push(Received {
                    at: Instant::now(),
                    headers: parts.headers,
                    body,
                    status: 200,
                });
                axum::http::StatusCode::OK
            }
        });
        let server = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((tcp, _)) = listener.accept().await {
                let service = hyper_util::service::TowerToHyperService::new(app.clone());
                connections.spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                        .await;
                });
                while connections.try_join_next().is_some() {}
            }
        });
        *self.server.lock().expect("app lock") = Some(server);
        bound
    }
}
