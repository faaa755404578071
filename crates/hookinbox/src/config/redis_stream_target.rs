//! A `redis_stream` target's settings, as checked from
//! `[[endpoint.target]]`: the server (`redis://`), the password kept apart
//! from its URL, the stream key template and the optional trim length.

use std::num::NonZeroU64;
use std::path::Path;
use std::time::Duration;

use redis::{ConnectionAddr, IntoConnectionInfo};
use secrecy::SecretString;
use serde::Serialize;

use super::checks::positive;
use super::name_template::NameTemplate;
use super::secret_source::{SecretFields, SecretSource};
use super::target::{KindFields, TargetFile};
use super::ConfigError;

/// A `redis_stream` target's server and stream.
#[derive(Debug, Clone, Serialize)]
pub struct RedisStreamDestination {
    /// `redis://host:port/db`, as shown: without user or password.
    pub url: String,
    /// `host:port`.
    #[serde(skip)]
    pub address: String,
    /// The logical database (`SELECT`).
    #[serde(skip)]
    pub db: i64,
    /// The ACL user, when the URL names one.
    pub username: Option<String>,
    /// The password: the one written in the URL, or `password_env` /
    /// `password_file`.
    pub password: Option<SecretSource>,
    /// Each event's stream key.
    pub stream: NameTemplate,
    /// `MAXLEN ~` on every `XADD`; absent: no trimming.
    pub maxlen: Option<NonZeroU64>,
    /// How long one attempt waits for a connection and the `XADD` reply.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

/// `redis_stream`: a server URL and its password, a stream, a trim length.
pub(super) const REDIS_STREAM_FIELDS: KindFields = KindFields {
    takes: &["url", "stream", "maxlen", "password_env", "password_file"],
    refusal: "a redis_stream target takes url, stream, maxlen, password_env and \
              password_file; this field is another kind's",
};

pub(super) fn redis_stream_destination(
    file: &TargetFile,
    field: &str,
    base_dir: &Path,
) -> Result<RedisStreamDestination, ConfigError> {
    let sub = |name: &str| format!("{field}.{name}");
    const SHAPE: &str = "must be a redis://host:port/db URL (rediss:// and unix sockets are \
                         not supported)";
    let text = file
        .url
        .as_deref()
        .ok_or_else(|| ConfigError::invalid(sub("url"), "a redis_stream target needs a url"))?;
    if !text.starts_with("redis://") {
        return Err(ConfigError::invalid(sub("url"), SHAPE));
    }
    // The parser's message may quote the URL, and the URL may hold a
    // password: it is never repeated.
    let info = text
        .into_connection_info()
        .map_err(|_| ConfigError::invalid(sub("url"), SHAPE))?;
    let ConnectionAddr::Tcp(host, port) = info.addr() else {
        return Err(ConfigError::invalid(sub("url"), SHAPE));
    };
    let address = format!("{host}:{port}");
    let settings = info.redis_settings();
    let db = settings.db();
    let username = settings.username().map(str::to_owned);
    let from_fields = SecretSource::from_fields(
        SecretFields {
            name: "password",
            inline: None,
            env: file.password_env.as_deref(),
            file: file.password_file.as_deref(),
        },
        field,
        base_dir,
    )?;
    let password = match (settings.password(), from_fields) {
        (None, source) => source,
        (Some(in_url), None) => Some(SecretSource::Inline(SecretString::from(in_url))),
        (Some(_), Some(source)) => {
            return Err(ConfigError::invalid(
                source.field_name(&sub("password")),
                "the url holds a password already: set one or the other",
            ))
        }
    };
    let stream = file.stream.as_deref().ok_or_else(|| {
        ConfigError::invalid(sub("stream"), "a redis_stream target needs a stream")
    })?;
    let stream =
        NameTemplate::parse(stream).map_err(|why| ConfigError::invalid(sub("stream"), why))?;
    let maxlen = match file.maxlen {
        None => None,
        Some(n) => Some(
            NonZeroU64::new(n)
                .ok_or_else(|| ConfigError::invalid(sub("maxlen"), "must be at least 1"))?,
        ),
    };
    let url = match &username {
        Some(user) => format!("redis://{user}@{address}/{db}"),
        None => format!("redis://{address}/{db}"),
    };
    Ok(RedisStreamDestination {
        url,
        address,
        db,
        username,
        password,
        stream,
        maxlen,
        timeout: positive(file.timeout, &sub("timeout"))?,
    })
}
