//! `sink`: the HTTP target of hookinbox's delivery benchmark (`bench/delivery.sh`).
//!
//! It answers `200` to every `POST`, after reading the whole body (as a real
//! target would, and so the sender's connection can be reused). It counts
//! requests and distinct `Idempotency-Key`s: hookinbox delivers at least once,
//! so the distinct count, not the request count, tells when every event has
//! arrived, and the difference is the number of redeliveries.
//!
//! `GET /stats` answers the counts as JSON, so a script can poll for
//! completion. The sink does no verification and keeps no bodies: it should
//! cost as little CPU as possible, because it shares the machine with the
//! server it measures. It runs on one thread by default for the same reason.
//!
//! Prints `sink listening on http://ADDR` on stdout once bound.

use std::collections::HashSet;
use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

#[derive(Debug, Parser)]
#[command(
    name = "sink",
    about = "HTTP sink for the delivery benchmark: 200 to every POST, counts requests and \
             distinct Idempotency-Keys, GET /stats answers the counts as JSON."
)]
struct Args {
    /// Address to listen on (port 0 picks a free port; the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,

    /// Tokio worker threads (1 = current-thread runtime, the cheapest).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

/// What the sink has seen since it started.
#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    /// POSTs without an `Idempotency-Key` header (hookinbox always sends one).
    missing_key: AtomicU64,
    body_bytes: AtomicU64,
    /// Unix milliseconds of the first and the latest POST (0: none yet).
    first_ms: AtomicI64,
    last_ms: AtomicI64,
    keys: Mutex<HashSet<Box<str>>>,
}

impl Counts {
    fn record(&self, key: Option<&str>, body_bytes: usize) {
        let now = unix_millis();
        let _ = self
            .first_ms
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        self.last_ms.fetch_max(now, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.body_bytes
            .fetch_add(body_bytes as u64, Ordering::Relaxed);
        match key {
            Some(key) => {
                // A poisoned lock only means another request panicked while
                // inserting; the set itself is still usable.
                let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
                if !keys.contains(key) {
                    keys.insert(key.into());
                }
            }
            None => {
                self.missing_key.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn to_json(&self) -> String {
        let distinct = self.keys.lock().unwrap_or_else(|e| e.into_inner()).len();
        let requests = self.requests.load(Ordering::Relaxed);
        serde_json::json!({
            "requests": requests,
            "distinct_keys": distinct,
            "redeliveries": requests
                .saturating_sub(self.missing_key.load(Ordering::Relaxed))
                .saturating_sub(distinct as u64),
            "missing_key": self.missing_key.load(Ordering::Relaxed),
            "body_bytes": self.body_bytes.load(Ordering::Relaxed),
            "first_ms": self.first_ms.load(Ordering::Relaxed),
            "last_ms": self.last_ms.load(Ordering::Relaxed),
        })
        .to_string()
    }
}

fn unix_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

async fn handle(
    counts: Arc<Counts>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let response = match (request.method(), request.uri().path()) {
        (&Method::POST, _) => {
            let key = request
                .headers()
                .get("idempotency-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            // Read the whole body, as a real target does; a body that fails
            // mid-way is not an arrival.
            match request.into_body().collect().await {
                Ok(body) => {
                    counts.record(key.as_deref(), body.to_bytes().len());
                    plain(StatusCode::OK, Bytes::from_static(b"ok"))
                }
                Err(_) => plain(StatusCode::BAD_REQUEST, Bytes::from_static(b"bad body")),
            }
        }
        (&Method::GET, "/stats") => {
            let mut response = plain(StatusCode::OK, Bytes::from(counts.to_json()));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            response
        }
        _ => plain(StatusCode::NOT_FOUND, Bytes::from_static(b"not found")),
    };
    Ok(response)
}

fn plain(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response
}

async fn serve(listener: TcpListener, counts: Arc<Counts>) -> Result<()> {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of file descriptors and the like: keep serving the open connections.
            Err(error) => {
                eprintln!("sink: accept failed: {error}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let counts = Arc::clone(&counts);
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(Arc::clone(&counts), request));
            // A connection the client drops is not the sink's concern.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// SIGINT or SIGTERM: the benchmark script stops the sink with SIGTERM.
async fn stop_signal() {
    let mut terminate =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut builder = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(args.threads);
        builder
    };
    let runtime = builder.enable_all().build()?;
    runtime.block_on(async {
        let listener = TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let bound = listener.local_addr()?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "sink listening on http://{bound}")?;
        stdout.flush()?;
        drop(stdout);
        let counts = Arc::new(Counts::default());
        tokio::select! {
            result = serve(listener, Arc::clone(&counts)) => result,
            () = stop_signal() => {
                eprintln!("sink: final {}", counts.to_json());
                Ok(())
            }
        }
    })
}
