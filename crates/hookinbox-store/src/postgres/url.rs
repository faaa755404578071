//! The PostgreSQL connection URL: parsed once, displayed only with its
//! password masked, and read for the TLS settings tokio-postgres does not
//! know itself (`sslmode=verify-ca|verify-full`, `sslrootcert`).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// How the connection to the database is protected, as libpq's `sslmode`
/// names it. The default, as in libpq, is `prefer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SslMode {
    /// Plain TCP.
    Disable,
    /// TLS when the server offers it, plain otherwise; the certificate is
    /// not checked (unless `sslrootcert` names a CA, then its chain is).
    #[default]
    Prefer,
    /// TLS or no connection. It encrypts; it authenticates the server only
    /// when `sslrootcert` names a CA (then the chain is checked, not the
    /// host name) — without one, as in libpq, it guards against a passive
    /// listener, not against an active man in the middle.
    Require,
    /// TLS, and the certificate chains to `sslrootcert` (or, without it,
    /// to the Mozilla roots); the host name is not checked.
    VerifyCa,
    /// TLS, the chain is checked as for `verify-ca`, and the certificate is
    /// for the host name in the URL.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<SslMode, PostgresUrlError> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(PostgresUrlError::SslMode(other.to_owned()));
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostgresUrlError {
    #[error("expected a URL starting with postgres:// or postgresql://")]
    Scheme,
    #[error("sslmode `{0}` is not one of disable, prefer, require, verify-ca, verify-full")]
    SslMode(String),
    /// tokio-postgres refused the URL; its message never holds the password.
    #[error("{0}")]
    Invalid(String),
}

/// A parsed `postgres://user:password@host:port/db?sslmode=…` URL. Its
/// `Display` and `Debug` mask the password, so it can be logged.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresUrl {
    config: tokio_postgres::Config,
    ssl_mode: SslMode,
    root_cert: Option<PathBuf>,
    masked: String,
}

impl PostgresUrl {
    pub fn parse(url: &str) -> Result<PostgresUrl, PostgresUrlError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(PostgresUrlError::Scheme);
        }
        let (base, query) = match url.split_once('?') {
            Some((base, query)) => (base, Some(query)),
            None => (url, None),
        };
        let mut ssl_mode = SslMode::default();
        let mut root_cert = None;
        let mut passed_on = Vec::new();
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            match pair.split_once('=') {
                Some(("sslmode", value)) => ssl_mode = SslMode::parse(&percent_decode(value))?,
                Some(("sslrootcert", value)) => {
                    root_cert = Some(PathBuf::from(percent_decode(value)));
                }
                _ if pair.is_empty() => {}
                _ => passed_on.push(pair),
            }
        }
        // tokio-postgres knows only disable/prefer/require; the stricter
        // modes are ours (see `tls`), and to it they are `require`.
        let mut for_driver = base.to_owned();
        if !passed_on.is_empty() {
            for_driver.push('?');
            for_driver.push_str(&passed_on.join("&"));
        }
        let mut config = tokio_postgres::Config::from_str(&for_driver)
            .map_err(|error| PostgresUrlError::Invalid(error.to_string()))?;
        config.ssl_mode(match ssl_mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        });
        Ok(PostgresUrl {
            config,
            ssl_mode,
            root_cert,
            masked: mask_password(url),
        })
    }

    pub fn ssl_mode(&self) -> SslMode {
        self.ssl_mode
    }

    /// The CA file (`sslrootcert`), if the URL names one.
    pub fn root_cert(&self) -> Option<&std::path::Path> {
        self.root_cert.as_deref()
    }

    /// The URL gives a password of its own.
    pub fn has_password(&self) -> bool {
        self.config.get_password().is_some()
    }

    /// The driver's configuration (with the password, if the URL has one).
    pub(crate) fn driver_config(&self) -> tokio_postgres::Config {
        self.config.clone()
    }
}

impl fmt::Display for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked)
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PostgresUrl").field(&self.masked).finish()
    }
}

impl FromStr for PostgresUrl {
    type Err = PostgresUrlError;

    fn from_str(url: &str) -> Result<PostgresUrl, PostgresUrlError> {
        PostgresUrl::parse(url)
    }
}

/// The URL with the password of its user-info and any `password=` query
/// parameter replaced by `***`.
fn mask_password(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path_and_query) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, hosts)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{hosts}"),
            None => format!("{user_info}@{hosts}"),
        },
        None => authority.to_owned(),
    };
    let path_and_query = match path_and_query.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some(("password", _)) => "password=***".to_owned(),
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => path_and_query.to_owned(),
    };
    format!("{scheme}://{authority}{path_and_query}")
}

/// Decodes `%XX` escapes (a path in `sslrootcert` may carry them).
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| value.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                i += 3;
            }
            None => {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_never_shows() {
        let url = PostgresUrl::parse("postgres://app:s3cr%40t@db.internal:5432/inbox").unwrap();
        assert_eq!(url.to_string(), "postgres://app:***@db.internal:5432/inbox");
        assert!(!format!("{url:?}").contains("s3cr"));
        assert!(url.has_password());
        let url = PostgresUrl::parse("postgresql://app@db/inbox?password=hunter2&sslmode=require")
            .unwrap();
        assert_eq!(
            url.to_string(),
            "postgresql://app@db/inbox?password=***&sslmode=require"
        );
        assert_eq!(
            PostgresUrl::parse("postgres://db/inbox")
                .unwrap()
                .to_string(),
            "postgres://db/inbox"
        );
    }

    #[test]
    fn ssl_modes_tokio_postgres_does_not_know_are_ours() {
        let url = PostgresUrl::parse(
            "postgres://app@db/inbox?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&connect_timeout=3",
        )
        .unwrap();
        assert_eq!(url.ssl_mode(), SslMode::VerifyFull);
        assert_eq!(url.root_cert(), Some(std::path::Path::new("/etc/ca.pem")));
        assert_eq!(
            url.driver_config().get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
        assert_eq!(
            url.driver_config().get_connect_timeout(),
            Some(&std::time::Duration::from_secs(3))
        );
        assert_eq!(
            PostgresUrl::parse("postgres://db").unwrap().ssl_mode(),
            SslMode::Prefer
        );
        assert_eq!(
            PostgresUrl::parse("postgres://db?sslmode=allow").unwrap_err(),
            PostgresUrlError::SslMode("allow".into())
        );
        assert_eq!(
            PostgresUrl::parse("mysql://db").unwrap_err(),
            PostgresUrlError::Scheme
        );
    }
}
