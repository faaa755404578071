//! `[admin]`, as parsed (the `*File`
//! structs) and checked: the admin listener's address, where its token comes
//! from, its `Host` allowlist and limits.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::checks::{non_zero_usize, positive};
use super::secret_source::{SecretFields, SecretSource};
use super::ConfigError;

/// The admin listener.
#[derive(Debug, Clone, Serialize)]
pub struct Admin {
    /// `admin.listen`: where the admin listener binds.
    pub listen: SocketAddr,
    /// Where the bearer token comes from; `None` only on a loopback address.
    pub token: Option<SecretSource>,
    /// `Host` values admitted besides addresses and `localhost`, as clients
    /// send them (compared without regard to case).
    pub allowed_hosts: Vec<String>,
    /// Time to receive a request head; also the idle timeout.
    #[serde(with = "humantime_serde")]
    pub header_read_timeout: Duration,
    /// Admin connections open at once.
    pub max_connections: NonZeroUsize,
}

impl Admin {
    pub(super) fn from_file(file: AdminFile, base_dir: &Path) -> Result<Admin, ConfigError> {
        let token = SecretSource::from_fields(
            SecretFields {
                name: "token",
                inline: file.token.as_ref(),
                env: file.token_env.as_deref(),
                file: file.token_file.as_deref(),
            },
            "admin",
            base_dir,
        )?;
        token_required(file.listen, token.as_ref(), "admin.listen")?;
        for (index, host) in file.allowed_hosts.iter().enumerate() {
            let valid = !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && !b"/?#@".contains(&b));
            if !valid {
                return Err(ConfigError::invalid(
                    format!("admin.allowed_hosts[{index}]"),
                    "expected a host as clients send it in `Host`, such as \"admin.internal:9090\"",
                ));
            }
        }
        Ok(Admin {
            listen: file.listen,
            token,
            allowed_hosts: file.allowed_hosts,
            header_read_timeout: positive(file.header_read_timeout, "admin.header_read_timeout")?,
            max_connections: non_zero_usize(file.max_connections, "admin.max_connections")?,
        })
    }

    /// `admin` listening on `listen` instead (`serve --admin-listen`), under
    /// the same rule as the file's address: off loopback, a token.
    pub fn listening_on(admin: Option<Admin>, listen: SocketAddr) -> Result<Admin, ConfigError> {
        let Some(admin) = admin else {
            return Err(ConfigError::invalid(
                "--admin-listen",
                "the configuration has no [admin] table to override: add one (`listen` and, \
                 off loopback, a token)",
            ));
        };
        token_required(listen, admin.token.as_ref(), "--admin-listen")?;
        Ok(Admin { listen, ..admin })
    }
}

/// Anyone who can reach the port could read the metrics and replay
/// events, so an address off loopback needs a token.
fn token_required(
    listen: SocketAddr,
    token: Option<&SecretSource>,
    field: &str,
) -> Result<(), ConfigError> {
    if token.is_none() && !listen.ip().is_loopback() {
        return Err(ConfigError::invalid(
            "admin.token",
            format!(
                "{field} {listen} is reachable from other machines (not a loopback \
                 address), so a token is required: set `token_env` (or `token_file`, `token`)"
            ),
        ));
    }
    Ok(())
}

/// `[admin]`: metrics and readiness, kept off the public port.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminFile {
    /// Address of the admin listener; keep it on loopback or a private network.
    pub listen: SocketAddr,
    /// The bearer token every admin request needs, inline (prefer `token_env`
    /// or `token_file`). Required when `listen` is not a loopback address.
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub token: Option<SecretString>,
    /// The bearer token from an environment variable.
    pub token_env: Option<String>,
    /// The bearer token from a file (trailing newline trimmed; relative to the config file).
    pub token_file: Option<PathBuf>,
    /// `Host` header values admitted besides an IP address or `localhost`
    /// with the listen port (the DNS rebinding guard), exactly as clients
    /// send them: `"admin.internal:9090"`, or a bare name behind a proxy on
    /// the default port.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Time for a request head to arrive; an idle keep-alive connection is
    /// closed after it too.
    #[serde(
        default = "default_admin_header_read_timeout",
        with = "humantime_serde"
    )]
    pub header_read_timeout: Duration,
    /// Admin connections open at once; further ones wait until one closes.
    #[serde(default = "default_admin_max_connections")]
    pub max_connections: usize,
}

fn default_admin_header_read_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_admin_max_connections() -> usize {
    16
}
