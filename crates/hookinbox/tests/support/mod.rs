//! Black-box test support: start the real `hookinbox` binary on a free port
//! with a config in a temporary directory, send it signed requests over real
//! HTTP, and read its SQLite file directly.

#![allow(dead_code)]

pub mod nats;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

pub const LAB_SECRET: &str = "lab-test-secret";

/// A config with one `lab` endpoint (`/hooks/lab`) storing in `db`, plus `extra` TOML.
pub fn config(db: &Path, extra: &str) -> String {
    format!(
        r#"
[storage]
url = "sqlite://{db}"

[[endpoint]]
id = "lab"
provider = "lab"

[[endpoint.secret]]
version = "v1"
value = "{LAB_SECRET}"
{extra}
"#,
        db = db.display()
    )
}

/// A running `hookinbox serve`.
pub struct Server {
    pub addr: SocketAddr,
    pub dir: PathBuf,
    pub config_path: PathBuf,
    child: Child,
}

impl Server {
    /// Writes `config` into `dir` and starts the binary on a free port.
    pub fn start(dir: &Path, config: &str) -> Server {
        let config_path = dir.join("hookinbox.toml");
        std::fs::write(&config_path, config).expect("write config");
        Self::start_with(dir, &config_path)
    }

    pub fn start_with(dir: &Path, config_path: &Path) -> Server {
        Self::start_with_args(dir, config_path, &[])
    }

    /// Starts `serve` with extra arguments (`--no-workers`).
    pub fn start_with_args(dir: &Path, config_path: &Path, args: &[&str]) -> Server {
        Self::start_full(dir, config_path, args, &[])
    }

    /// Starts `serve` with `HOOKINBOX_FAILPOINT` set: it aborts at that point.
    pub fn start_with_failpoint(dir: &Path, config: &str, failpoint: &str) -> Server {
        let config_path = dir.join("hookinbox.toml");
        std::fs::write(&config_path, config).expect("write config");
        Self::start_full(
            dir,
            &config_path,
            &[],
            &[("HOOKINBOX_FAILPOINT", failpoint)],
        )
    }

    fn start_full(dir: &Path, config_path: &Path, args: &[&str], envs: &[(&str, &str)]) -> Server {
        Self::start_binary(
            Path::new(env!("CARGO_BIN_EXE_hookinbox")),
            dir,
            config_path,
            args,
            envs,
        )
    }

    /// Starts `serve` from `binary` (see [`release_binary`]).
    pub fn start_binary(
        binary: &Path,
        dir: &Path,
        config_path: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Server {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("stderr.log"))
            .expect("open log");
        let mut child = Command::new(binary)
            .args(["serve", "--config"])
            .arg(config_path)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .envs(envs.iter().copied())
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("spawn hookinbox");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read stdout");
        let addr = line
            .trim()
            .rsplit("://")
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                let logs = std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
                panic!("hookinbox did not start: stdout {line:?}\n{logs}")
            });
        Server {
            addr,
            dir: dir.to_owned(),
            config_path: config_path.to_owned(),
            child,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The process's resident memory, from /proc.
    pub fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read /proc status");
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("VmRSS in /proc status");
        kib * 1024
    }

    /// The admin listener's address, as the server announced it on stderr.
    pub async fn admin_address(&self) -> SocketAddr {
        let mut address = None;
        eventually(Duration::from_secs(5), || {
            address = self
                .logs()
                .lines()
                .find(|l| l.contains("Admin listener up."))
                .and_then(|l| l.split("address=").nth(1))
                .and_then(|a| a.split_whitespace().next())
                .and_then(|a| a.parse().ok());
            address.is_some()
        })
        .await;
        address.expect("the admin listener was announced")
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The process id, to send it signals (SIGHUP).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the server wrote on stderr so far (all runs in this dir).
    pub fn logs(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A signed `lab` request: headers and body.
#[derive(Clone)]
pub struct Signed {
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

pub fn lab_signed(body: impl Into<Vec<u8>>, timestamp: i64) -> Signed {
    let body = body.into();
    let signature = hookinbox_verify::providers::lab::sign(LAB_SECRET, timestamp, &body);
    Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-timestamp".into(), timestamp.to_string()),
            ("x-signature".into(), signature),
        ],
        body: body.into(),
    }
}

/// A signed `lab` event with this id, signed now.
pub fn lab_event(id: &str) -> Signed {
    lab_signed(
        format!(r#"{{"id":"{id}","type":"payment.succeeded","amount":1}}"#),
        now(),
    )
}

/// A plain HTTP/1.1 client.
pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(5))
        .build_http()
}

/// The answer to one request.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    pub fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_default().to_owned()
    }
}

pub async fn send(
    client: &HttpClient,
    method: &str,
    url: &str,
    signed: &Signed,
) -> Result<Answer, String> {
    let mut request = hyper::Request::builder().method(method).uri(url);
    for (name, value) in &signed.headers {
        request = request.header(name, value);
    }
    let request = request
        .body(Full::new(signed.body.clone()))
        .map_err(|e| e.to_string())?;
    let response = client.request(request).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok(Answer {
        status,
        headers,
        body,
    })
}

pub async fn post(client: &HttpClient, url: &str, signed: &Signed) -> Answer {
    send(client, "POST", url, signed)
        .await
        .expect("request failed")
}

/// The inbox rows as (inbox id, endpoint, provider event id), read with a
/// connection of the test's own.
pub fn inbox_rows(db: &Path) -> Vec<(String, String, String)> {
    let conn = rusqlite::Connection::open(db).expect("open db");
    let mut statement = conn
        .prepare("SELECT id, endpoint_id, provider_event_id FROM inbox ORDER BY id")
        .expect("prepare");
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

/// The Standard Webhooks secret test targets sign with.
pub const TARGET_SECRET: &str = "whsec_dGFyZ2V0LXNlY3JldC1mb3ItdGVzdHMtMDAwMDAwMDA=";

/// A config whose `lab` endpoint delivers to one http target `sink` at
/// `url`; `target_extra` adds target settings, `extra` more TOML.
pub fn config_with_target(db: &Path, url: &str, target_extra: &str, extra: &str) -> String {
    format!(
        r#"
[storage]
url = "sqlite://{db}"

[delivery]
poll_interval = "50ms"
lease = "1s"
rescue_interval = "200ms"

[[endpoint]]
id = "lab"
provider = "lab"

[[endpoint.secret]]
version = "v1"
value = "{LAB_SECRET}"

[[endpoint.target]]
name = "sink"
kind = "http"
url = "{url}"
secret = "{TARGET_SECRET}"
timeout = "2s"
retry_base = "20ms"
retry_cap = "200ms"
{target_extra}
{extra}
"#,
        db = db.display()
    )
}

/// One request a sink received, and what it answered.
#[derive(Debug, Clone)]
pub struct Received {
    pub at: std::time::Instant,
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
    received: std::sync::Arc<std::sync::Mutex<Vec<Received>>>,
    responder: std::sync::Arc<std::sync::Mutex<Responder>>,
    delay_ms: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Sink {
    /// A sink answering 200 on a free port.
    pub async fn start() -> Sink {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Sink::serve(listener)
    }

    /// A sink on a port reserved earlier (see `reserve_port`).
    pub async fn start_on(addr: SocketAddr) -> Sink {
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        Sink::serve(listener)
    }

    /// A sink answering 200 over TLS on a free port, with `pki`'s server
    /// certificate; its URL is `https_url()`.
    pub async fn start_tls(pki: &TestPki) -> Sink {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let sink = Sink::new(listener.local_addr().unwrap());
        let app = sink.app();
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::clone(&pki.server_config));
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

    pub fn https_url(&self) -> String {
        format!("https://{}/internal", self.addr)
    }

    fn new(addr: SocketAddr) -> Sink {
        Sink {
            addr,
            received: Default::default(),
            responder: std::sync::Arc::new(std::sync::Mutex::new(Box::new(|_, _| (200, vec![])))),
            delay_ms: Default::default(),
        }
    }

    fn serve(listener: tokio::net::TcpListener) -> Sink {
        let sink = Sink::new(listener.local_addr().unwrap());
        let app = sink.app();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        sink
    }

    /// Records each request and answers as the responder says.
    fn app(&self) -> axum::Router {
        {
            let sink = self.clone();
            axum::Router::new().fallback(move |request: axum::extract::Request| {
                let sink = sink.clone();
                async move {
                    let (parts, body) = request.into_parts();
                    let body = axum::body::to_bytes(body, 4 << 20)
                        .await
                        .unwrap_or_default();
                    let delay = sink.delay_ms.load(std::sync::atomic::Ordering::Relaxed);
                    if delay > 0 {
                        tokio::time::sleep(Duration::from_millis(delay)).await;
                    }
                    let mut received = Received {
                        at: std::time::Instant::now(),
                        headers: parts.headers,
                        body,
                        status: 0,
                    };
                    let (status, headers) = {
                        let n = sink.received.lock().unwrap().len();
                        (sink.responder.lock().unwrap())(n, &received)
                    };
                    received.status = status;
                    sink.received.lock().unwrap().push(received);
                    let mut response = axum::response::Response::builder().status(status);
                    for (name, value) in headers {
                        response = response.header(name, value);
                    }
                    response.body(axum::body::Body::empty()).unwrap()
                }
            })
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/internal", self.addr)
    }

    /// Sets how the sink answers the n-th request (0-based, over its life).
    pub fn respond_with(
        &self,
        responder: impl FnMut(usize, &Received) -> (u16, Vec<(String, String)>) + Send + 'static,
    ) {
        *self.responder.lock().unwrap() = Box::new(responder);
    }

    /// Makes every answer take this long (a slow target).
    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms.store(
            delay.as_millis() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// The requests it answered with 2xx.
    pub fn accepted(&self) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| (200..300).contains(&r.status))
            .collect()
    }
}

/// The `hookinbox` binary built with the release profile, for tests that
/// measure what users run (memory, latency under load). It is built on
/// first use with the same cargo and target directory (a no-op when CI has
/// built it already).
pub fn release_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            let out = Command::new(env!("CARGO"))
                .args([
                    "build",
                    "--release",
                    "--locked",
                    "-p",
                    "hookinbox",
                    "--bin",
                    "hookinbox",
                ])
                .args(["--message-format", "json-render-diagnostics"])
                .current_dir(&workspace)
                .stderr(Stdio::inherit())
                .output()
                .expect("run cargo build --release");
            assert!(out.status.success(), "cargo build --release failed");
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                .filter(|m| {
                    m["reason"] == "compiler-artifact" && m["target"]["name"] == "hookinbox"
                })
                .find_map(|m| m["executable"].as_str().map(PathBuf::from))
                .expect("cargo reported the release binary")
        })
        .clone()
}

/// The sum of every series of the metric `name` on the admin listener at
/// `admin` (no token), or `None` when the metric is not exported.
pub async fn metric_value(admin: SocketAddr, name: &str) -> Option<f64> {
    let request = hyper::Request::get(format!("http://{admin}/metrics"))
        .body(Full::default())
        .ok()?;
    let response = client().request(request).await.ok()?;
    let text = response.into_body().collect().await.ok()?.to_bytes();
    let mut found = None;
    for line in String::from_utf8_lossy(&text).lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        if !(rest.starts_with(' ') || rest.starts_with('{')) {
            continue;
        }
        let value: f64 = rest.rsplit(' ').next()?.parse().ok()?;
        *found.get_or_insert(0.0) += value;
    }
    found
}

/// A free port with nothing listening on it (yet).
pub fn reserve_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// Polls `check` every 20 ms until it holds or `timeout` passes.
pub async fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Bytes in the payload log beside the database (all segments), as the
/// store reports them.
pub fn payload_log_bytes(db: &Path) -> u64 {
    disk_usage(db).payload_log_bytes
}

/// Segment files in the payload log beside the database, as the store
/// reports them.
pub fn payload_log_segments(db: &Path) -> u64 {
    disk_usage(db).payload_segments
}

fn disk_usage(db: &Path) -> hookinbox_store::DiskUsage {
    let stats = hookinbox_store::SqliteReader::open(db)
        .expect("open the database")
        .stats()
        .expect("stats");
    stats.disk.expect("an embedded store reports its disk use")
}

/// Sends `signed` again, as a provider retries, until it is answered 200
/// (returned) or `give_up_after` passes; any answer other than 503 on the
/// way fails the test.
pub async fn retry_until_accepted(
    client: &HttpClient,
    url: &str,
    signed: &Signed,
    give_up_after: Duration,
) -> Answer {
    let give_up = std::time::Instant::now() + give_up_after;
    loop {
        let answer = post(client, url, signed).await;
        match answer.status {
            200 => return answer,
            503 if std::time::Instant::now() < give_up => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("retry answered {other}: {:?}", answer.body),
        }
    }
}

/// Inbox status by provider event id.
pub fn inbox_status(db: &Path) -> std::collections::HashMap<String, String> {
    query_pairs(db, "SELECT provider_event_id, status FROM inbox")
}

/// Every row of a two-column query, read through a connection of its own.
fn query_pairs<A, B, C>(db: &Path, sql: &str) -> C
where
    A: rusqlite::types::FromSql,
    B: rusqlite::types::FromSql,
    C: FromIterator<(A, B)>,
{
    let conn = rusqlite::Connection::open(db).expect("open db");
    let mut statement = conn.prepare(sql).expect("prepare");
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

/// Runs `hookinbox serve` on a config that must not start; its exit code
/// and stderr.
pub fn serve_refused(config: &Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .envs(env.iter().copied())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .output()
        .expect("run hookinbox");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A throwaway CA and a server certificate it issued for `names`, made at
/// test time (nothing on disk until a test writes `ca_pem`).
pub struct TestPki {
    /// The CA certificate, PEM: what a target's `ca_file` holds.
    pub ca_pem: String,
    /// The issued server certificate and its private key (PKCS#8), PEM:
    /// what `[server.tls]` files hold.
    pub cert_pem: String,
    pub key_pem: String,
    /// A TLS server configuration presenting the issued certificate.
    pub server_config: std::sync::Arc<rustls::ServerConfig>,
}

impl TestPki {
    /// `names`: DNS names or IP addresses the server certificate is valid for.
    pub fn new(names: &[&str]) -> TestPki {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "hookinbox test CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = ca_params.self_signed(&ca_key).unwrap();

        let server_key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let server = CertificateParams::new(names)
            .unwrap()
            .signed_by(&server_key, &ca, &ca_key)
            .unwrap();

        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into());
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let server_config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![server.der().clone()], key)
            .unwrap();
        TestPki {
            ca_pem: ca.pem(),
            cert_pem: server.pem(),
            key_pem: server_key.serialize_pem(),
            server_config: std::sync::Arc::new(server_config),
        }
    }
}

/// Every delivery row as (status, last_error).
pub fn deliveries(db: &Path) -> Vec<(String, Option<String>)> {
    query_pairs(db, "SELECT status, last_error FROM delivery ORDER BY id")
}

/// Sends SIGHUP to the server process (`kill -HUP`, as `systemctl reload`).
pub fn sighup(server: &Server) {
    let status = std::process::Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
}

/// Waits until the server's log holds `count` lines containing `needle`.
pub async fn logged(server: &Server, needle: &str, count: usize) {
    let seen = eventually(Duration::from_secs(10), || {
        server.logs().matches(needle).count() >= count
    })
    .await;
    assert!(seen, "no {needle:?} (x{count}) in:\n{}", server.logs());
}
