//! A capturing HTTP target: records every request it receives and answers
//! as the test says. Each sink listens on a socket bound for it (port 0), so
//! no port is ever reserved, dropped and hoped for.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::net::{TcpListener, TcpSocket};

use crate::pki::TestPki;

/// One request a sink received, and what it answered.
#[derive(Debug, Clone)]
pub struct Received {
    pub at: Instant,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
    pub status: u16,
}

impl Received {
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }
}

type Responder = Box<dyn FnMut(usize, &Received) -> (u16, Vec<(String, String)>) + Send>;

/// A capturing HTTP target: records every request, answers as told.
#[derive(Clone)]
pub struct Sink {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    responder: Arc<Mutex<Responder>>,
    delay_ms: Arc<AtomicU64>,
}

/// A port on 127.0.0.1 held by a socket that is bound but not listening:
/// a connection to it is refused (a target that is down), and nothing that
/// picks a free port can be given it meanwhile.
///
/// - [`Sink::start_on`] starts listening on the socket itself: the target
///   comes up on the port its URL named all along.
/// - A service told to listen on [`ReservedPort::addr`] binds it too: the
///   socket has `SO_REUSEADDR`, as the service's listener does, and a port
///   bound that way by sockets that are not listening can be shared. Keep
///   the reservation until the service is up.
///
/// (Reserving a port by binding and dropping a listener, then binding it
/// again, lets any other process on the machine take it in between.)
pub struct ReservedPort {
    socket: TcpSocket,
    addr: SocketAddr,
}

impl ReservedPort {
    pub fn new() -> ReservedPort {
        let socket = TcpSocket::new_v4().expect("a TCP socket");
        socket.set_reuseaddr(true).expect("SO_REUSEADDR");
        socket
            .bind("127.0.0.1:0".parse().expect("an address"))
            .expect("bind a port");
        let addr = socket.local_addr().expect("the bound address");
        ReservedPort { socket, addr }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL a sink started on this port will answer at.
    pub fn url(&self) -> String {
        format!("http://{}/internal", self.addr)
    }
}

impl Default for ReservedPort {
    fn default() -> Self {
        ReservedPort::new()
    }
}

impl Sink {
    /// A sink answering 200 on a port of its own.
    pub async fn start() -> Sink {
        Sink::serve(ReservedPort::new())
    }

    /// A sink answering 200 on `port`, down until now.
    pub async fn start_on(port: ReservedPort) -> Sink {
        Sink::serve(port)
    }

    /// A sink answering 200 over TLS on a port of its own, with `pki`'s
    /// server certificate; its URL is [`Sink::https_url`].
    pub async fn start_tls(pki: &TestPki) -> Sink {
        let listener = listen(ReservedPort::new());
        let sink = Sink::new(listener.local_addr().expect("the bound address"));
        let app = sink.app();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(&pki.server_config));
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let service = hyper_util::service::TowerToHyperService::new(app.clone());
                tokio::spawn(async move {
                    // A client that refuses the certificate ends here.
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        sink
    }

    pub fn url(&self) -> String {
        format!("http://{}/internal", self.addr)
    }

    pub fn https_url(&self) -> String {
        format!("https://{}/internal", self.addr)
    }

    fn new(addr: SocketAddr) -> Sink {
        Sink {
            addr,
            received: Default::default(),
            responder: Arc::new(Mutex::new(Box::new(|_, _| (200, vec![])))),
            delay_ms: Default::default(),
        }
    }

    fn serve(port: ReservedPort) -> Sink {
        let listener = listen(port);
        let sink = Sink::new(listener.local_addr().expect("the bound address"));
        let app = sink.app();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        sink
    }

    /// Records each request and answers as the responder says.
    fn app(&self) -> axum::Router {
        let sink = self.clone();
        axum::Router::new().fallback(move |request: axum::extract::Request| {
            let sink = sink.clone();
            async move {
                let (parts, body) = request.into_parts();
                let body = axum::body::to_bytes(body, 4 << 20)
                    .await
                    .unwrap_or_default();
                let delay = sink.delay_ms.load(Ordering::Relaxed);
                if delay > 0 {
                    // A slow target: the answer takes this long.
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                }
                let mut received = Received {
                    at: Instant::now(),
                    headers: parts.headers,
                    body,
                    status: 0,
                };
                let (status, headers) = {
                    let n = sink.received.lock().expect("sink lock").len();
                    (sink.responder.lock().expect("sink lock"))(n, &received)
                };
                received.status = status;
                sink.received.lock().expect("sink lock").push(received);
                let mut response = axum::response::Response::builder().status(status);
                for (name, value) in headers {
                    response = response.header(name, value);
                }
                response
                    .body(axum::body::Body::empty())
                    .expect("a response the test described")
            }
        })
    }

    /// Sets how the sink answers the n-th request (0-based, over its life).
    pub fn respond_with(
        &self,
        responder: impl FnMut(usize, &Received) -> (u16, Vec<(String, String)>) + Send + 'static,
    ) {
        *self.responder.lock().expect("sink lock") = Box::new(responder);
    }

    /// Makes every answer take this long (a slow target).
    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::Relaxed);
    }

    /// Every request so far, in the order they were answered.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("sink lock").clone()
    }

    /// The requests it answered with 2xx.
    pub fn accepted(&self) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| (200..300).contains(&r.status))
            .collect()
    }
}

fn listen(port: ReservedPort) -> TcpListener {
    port.socket
        .listen(1024)
        .expect("listen on the reserved port")
}
