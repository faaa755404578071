//! `[server]` and `[server.tls]`, checked: the public listener's address,
//! limits and certificate files.

use std::net::{IpAddr, SocketAddr};
use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ipnet::IpNet;
use serde::Serialize;

use super::checks::{non_zero_u32, non_zero_u64, non_zero_usize, positive, serialize_displayed};
use super::file::{RateLimitFile, ServerFile, TlsFile};
use super::ConfigError;

/// The public listener.
#[derive(Debug, Clone, Serialize)]
pub struct Server {
    pub listen: SocketAddr,
    pub max_headers: NonZeroUsize,
    pub max_header_bytes: usize,
    #[serde(with = "humantime_serde")]
    pub header_read_timeout: Duration,
    #[serde(with = "humantime_serde")]
    pub body_read_timeout: Duration,
    #[serde(with = "humantime_serde")]
    pub body_rate_grace: Duration,
    pub min_body_bytes_per_second: NonZeroU64,
    /// At most 4 GiB: the budget is a semaphore of `u32` permits.
    pub max_inflight_body_bytes: NonZeroU32,
    pub max_connections: NonZeroUsize,
    pub listen_backlog: NonZeroU32,
    pub max_requests_per_connection: NonZeroU32,
    #[serde(with = "humantime_serde")]
    pub linger_timeout: Duration,
    pub linger_max_bytes: u64,
    #[serde(serialize_with = "serialize_displayed")]
    pub trusted_proxies: Vec<IpNet>,
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    pub unverified_rate_limit: RateLimit,
    pub tls: Option<Tls>,
}

/// `[server.tls]`, with both paths resolved against the config file's directory.
#[derive(Debug, Clone, Serialize)]
pub struct Tls {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    #[serde(with = "humantime_serde")]
    pub handshake_timeout: Duration,
}

/// A token bucket whose rate and burst are both positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateLimit {
    pub per_second: NonZeroU32,
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
