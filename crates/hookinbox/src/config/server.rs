//! `[server]` and `[server.tls]`, as parsed (the `*File`
//! structs) and checked: the public listener's address,
//! limits and certificate files.

use std::net::{IpAddr, SocketAddr};
use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::checks::{non_zero_u32, non_zero_u64, non_zero_usize, positive, serialize_displayed};
use super::ConfigError;

/// The public listener.
#[derive(Debug, Clone, Serialize)]
pub struct Server {
    /// `server.listen`: where the public listener binds.
    pub listen: SocketAddr,
    /// Header fields a request head may carry (431 past it).
    pub max_headers: NonZeroUsize,
    /// Bytes a request head may take (431 past it).
    pub max_header_bytes: usize,
    /// Time to receive a request head; also how long an idle
    /// keep-alive connection is kept.
    #[serde(with = "humantime_serde")]
    pub header_read_timeout: Duration,
    /// Time a whole body may take, however fast it comes (408).
    #[serde(with = "humantime_serde")]
    pub body_read_timeout: Duration,
    /// How long a body may arrive slower than `min_body_bytes_per_second`.
    #[serde(with = "humantime_serde")]
    pub body_rate_grace: Duration,
    /// Average rate a body must keep up once the grace period is over.
    pub min_body_bytes_per_second: NonZeroU64,
    /// At most 4 GiB: the budget is a semaphore of `u32` permits.
    pub max_inflight_body_bytes: NonZeroU32,
    /// Public connections open at once.
    pub max_connections: NonZeroUsize,
    /// Connections the kernel queues while the listener is at its cap.
    pub listen_backlog: NonZeroU32,
    /// Requests served on one connection before it is closed.
    pub max_requests_per_connection: NonZeroU32,
    /// After an answer sent before the body was read: how long the
    /// rest is read and thrown away before the connection closes.
    #[serde(with = "humantime_serde")]
    pub linger_timeout: Duration,
    /// …and at most how many bytes of it.
    pub linger_max_bytes: u64,
    /// Proxies whose `X-Forwarded-For` names the client.
    #[serde(serialize_with = "serialize_displayed")]
    pub trusted_proxies: Vec<IpNet>,
    /// At shutdown: how long requests and deliveries in flight may take.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// Refused (unverified) requests one client may send.
    pub unverified_rate_limit: RateLimit,
    /// `[server.tls]`: HTTPS on the public port.
    pub tls: Option<Tls>,
}

/// `[server.tls]`, with both paths resolved against the config file's directory.
#[derive(Debug, Clone, Serialize)]
pub struct Tls {
    /// PEM certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// PEM private key of the chain's leaf.
    pub key_file: PathBuf,
    /// A connection whose handshake is not done by then is closed.
    #[serde(with = "humantime_serde")]
    pub handshake_timeout: Duration,
}

/// A token bucket whose rate and burst are both positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateLimit {
    /// Tokens added per second.
    pub per_second: NonZeroU32,
    /// Tokens the bucket holds.
    pub burst: NonZeroU32,
}

impl RateLimit {
    /// `field` names the table (`server.unverified_rate_limit`).
    pub(super) fn from_file(file: &RateLimitFile, field: &str) -> Result<RateLimit, ConfigError> {
        let per_second = non_zero_u32(file.per_second, &format!("{field}.per_second"))?;
        let burst = match file.burst {
            Some(burst) => non_zero_u32(burst, &format!("{field}.burst"))?,
            None => per_second,
        };
        Ok(RateLimit { per_second, burst })
    }
}

impl Server {
    pub(super) fn from_file(file: ServerFile, base_dir: &Path) -> Result<Server, ConfigError> {
        let max_inflight_body_bytes = u32::try_from(file.max_inflight_body_bytes)
            .map_err(|_| {
                ConfigError::invalid("server.max_inflight_body_bytes", "must be at most 4 GiB")
            })
            .and_then(|bytes| non_zero_u32(bytes, "server.max_inflight_body_bytes"))?;
        let trusted_proxies = file
            .trusted_proxies
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                parse_proxy(entry).ok_or_else(|| {
                    ConfigError::invalid(
                        format!("server.trusted_proxies[{index}]"),
                        format!("`{entry}` is not an IP address or CIDR range"),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Server {
            listen: file.listen,
            max_headers: non_zero_usize(file.max_headers, "server.max_headers")?,
            max_header_bytes: file.max_header_bytes,
            header_read_timeout: positive(file.header_read_timeout, "server.header_read_timeout")?,
            body_read_timeout: positive(file.body_read_timeout, "server.body_read_timeout")?,
            body_rate_grace: file.body_rate_grace,
            min_body_bytes_per_second: non_zero_u64(
                file.min_body_bytes_per_second,
                "server.min_body_bytes_per_second",
            )?,
            max_inflight_body_bytes,
            max_connections: non_zero_usize(file.max_connections, "server.max_connections")?,
            listen_backlog: non_zero_u32(file.listen_backlog, "server.listen_backlog")?,
            max_requests_per_connection: non_zero_u32(
                file.max_requests_per_connection,
                "server.max_requests_per_connection",
            )?,
            linger_timeout: file.linger_timeout,
            linger_max_bytes: file.linger_max_bytes,
            trusted_proxies,
            shutdown_grace: file.shutdown_grace,
            unverified_rate_limit: RateLimit::from_file(
                &file.unverified_rate_limit,
                "server.unverified_rate_limit",
            )?,
            tls: file
                .tls
                .map(|tls| Tls::from_file(tls, base_dir))
                .transpose()?,
        })
    }
}

impl Tls {
    fn from_file(file: TlsFile, base_dir: &Path) -> Result<Tls, ConfigError> {
        Ok(Tls {
            cert_file: base_dir.join(file.cert_file),
            key_file: base_dir.join(file.key_file),
            handshake_timeout: positive(file.handshake_timeout, "server.tls.handshake_timeout")?,
        })
    }
}

/// An address (`192.0.2.7`) or a range (`10.0.0.0/8`).
fn parse_proxy(entry: &str) -> Option<IpNet> {
    let entry = entry.trim();
    entry
        .parse::<IpNet>()
        .ok()
        .or_else(|| entry.parse::<IpAddr>().ok().map(IpNet::from))
}

/// `[server]`: the public listener and its limits.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerFile {
    /// Address of the public listener; `serve --listen` overrides it.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Most header fields one request may carry; more is answered 431.
    #[serde(default = "default_max_headers")]
    pub max_headers: usize,
    /// Most bytes of the request head (request line and headers); more is
    /// answered 431. Values under 8 KiB count as 8 KiB.
    #[serde(default = "default_max_header_bytes")]
    pub max_header_bytes: usize,
    /// Time allowed to receive the request head; also how long an idle
    /// keep-alive connection is kept open.
    #[serde(default = "default_header_read_timeout", with = "humantime_serde")]
    pub header_read_timeout: Duration,
    /// Time allowed to receive the whole body, however fast it comes.
    #[serde(default = "default_body_read_timeout", with = "humantime_serde")]
    pub body_read_timeout: Duration,
    /// Time a body may take before `min_body_bytes_per_second` applies.
    #[serde(default = "default_body_rate_grace", with = "humantime_serde")]
    pub body_rate_grace: Duration,
    /// Average rate a body must keep up after the grace period; slower ones
    /// end in 408 `timeout`.
    #[serde(default = "default_min_body_bytes_per_second")]
    pub min_body_bytes_per_second: u64,
    /// Bytes of request bodies held in memory at once, across all requests
    /// (buffers are claimed as bytes arrive); past it requests get 503.
    #[serde(default = "default_max_inflight_body_bytes")]
    pub max_inflight_body_bytes: u64,
    /// Connections open at once on the public listener. Start-up raises the
    /// open-file limit to its hard limit and lowers this (with a warning) if
    /// the limit cannot hold it.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Connections the kernel queues while the listener is at its cap.
    #[serde(default = "default_listen_backlog")]
    pub listen_backlog: u32,
    /// Requests served on one keep-alive connection before it is closed.
    #[serde(default = "default_max_requests_per_connection")]
    pub max_requests_per_connection: u32,
    /// After answering before the body was read (413, 404, 429, …): how
    /// long the rest of the body is read and discarded, so a client that
    /// writes before it reads still gets the answer.
    #[serde(default = "default_linger_timeout", with = "humantime_serde")]
    pub linger_timeout: Duration,
    /// …and at most how many bytes of it.
    #[serde(default = "default_linger_max_bytes")]
    pub linger_max_bytes: u64,
    /// Proxies (addresses or CIDR ranges) whose `X-Forwarded-For` names the
    /// client, for the per-client limit. Empty: the peer is the client.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// Per-client limit on requests refused before or at verification; once
    /// spent the client gets 429 before its body is read. Verified requests
    /// never spend it.
    #[serde(default = "default_unverified_rate_limit")]
    pub unverified_rate_limit: RateLimitFile,
    /// How long in-flight requests and deliveries may take to finish at
    /// shutdown (SIGTERM, Ctrl-C).
    #[serde(default = "default_shutdown_grace", with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// TLS on the public listener, for deployments without a terminating proxy.
    pub tls: Option<TlsFile>,
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8080))
}
fn default_max_headers() -> usize {
    64
}
fn default_max_header_bytes() -> usize {
    16 * 1024
}
fn default_header_read_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_body_read_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_body_rate_grace() -> Duration {
    Duration::from_secs(2)
}
fn default_min_body_bytes_per_second() -> u64 {
    16 * 1024
}
fn default_max_inflight_body_bytes() -> u64 {
    128 * 1024 * 1024
}
fn default_max_connections() -> usize {
    10_000
}
fn default_listen_backlog() -> u32 {
    4_096
}
fn default_max_requests_per_connection() -> u32 {
    1_000
}
fn default_linger_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_linger_max_bytes() -> u64 {
    16 * 1024 * 1024
}
fn default_unverified_rate_limit() -> RateLimitFile {
    RateLimitFile {
        per_second: 20,
        burst: Some(200),
    }
}
fn default_shutdown_grace() -> Duration {
    Duration::from_secs(10)
}

impl Default for ServerFile {
    fn default() -> Self {
        ServerFile {
            listen: default_listen(),
            max_headers: default_max_headers(),
            max_header_bytes: default_max_header_bytes(),
            header_read_timeout: default_header_read_timeout(),
            body_read_timeout: default_body_read_timeout(),
            body_rate_grace: default_body_rate_grace(),
            min_body_bytes_per_second: default_min_body_bytes_per_second(),
            max_inflight_body_bytes: default_max_inflight_body_bytes(),
            max_connections: default_max_connections(),
            listen_backlog: default_listen_backlog(),
            max_requests_per_connection: default_max_requests_per_connection(),
            linger_timeout: default_linger_timeout(),
            linger_max_bytes: default_linger_max_bytes(),
            trusted_proxies: Vec::new(),
            unverified_rate_limit: default_unverified_rate_limit(),
            shutdown_grace: default_shutdown_grace(),
            tls: None,
        }
    }
}

/// `[server.tls]`: the certificate the public listener presents. Reloaded
/// on SIGHUP; new handshakes use the new files, open connections keep theirs.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFile {
    /// PEM file of the certificate chain, leaf first (relative to the config file).
    pub cert_file: PathBuf,
    /// PEM file of the private key: PKCS#8, PKCS#1 or SEC1 (relative to the config file).
    pub key_file: PathBuf,
    /// Time allowed for a TLS handshake: a client that opens a connection
    /// and then stalls the handshake is a slow-loris too.
    #[serde(default = "default_handshake_timeout", with = "humantime_serde")]
    pub handshake_timeout: Duration,
}

fn default_handshake_timeout() -> Duration {
    Duration::from_secs(10)
}

/// A token bucket: `{ per_second = 20, burst = 200 }`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitFile {
    /// Sustained requests per second.
    pub per_second: u32,
    /// Requests allowed in a burst above the sustained rate; defaults to `per_second`.
    pub burst: Option<u32>,
}
