//! A `rabbitmq` target's settings, as checked from `[[endpoint.target]]`:
//! the broker's URL (`amqp://` or `amqps://`), the password kept apart from
//! it, the exchange and the routing key template.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lapin::types::ShortString;
use lapin::uri::{AMQPScheme, AMQPUri};
use secrecy::SecretString;
use serde::{Serialize, Serializer};

use super::checks::positive;
use super::name_template::NameTemplate;
use super::secret_source::{SecretFields, SecretSource};
use super::target::{KindFields, TargetFile};
use super::ConfigError;

/// A `rabbitmq` target's broker, exchange and routing key.
#[derive(Debug, Clone, Serialize)]
pub struct RabbitmqDestination {
    /// The broker: host, port, vhost, user and the URL's query options;
    /// never a password (that is `password`).
    #[serde(serialize_with = "serialize_amqp_uri")]
    pub url: AMQPUri,
    /// The password: the one written in the URL, or `password_env` /
    /// `password_file`. Absent: the URL's user has an empty password.
    pub password: Option<SecretSource>,
    /// Where events are published (`""`: the default exchange).
    pub exchange: String,
    /// Each event's routing key.
    pub routing_key: NameTemplate,
    /// Only with `amqps://`: CA certificates then trusted beside Mozilla's
    /// roots (lapin adds them to its webpki root store).
    pub ca_file: Option<PathBuf>,
    /// How long one attempt waits for a connection and the confirm.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

impl RabbitmqDestination {
    /// Whether the connection is TLS (`amqps://`).
    pub fn is_tls(&self) -> bool {
        self.url.scheme == AMQPScheme::AMQPS
    }
}

/// Scheme, user, host, port and vhost, never a password (`config check`).
fn serialize_amqp_uri<S: Serializer>(uri: &AMQPUri, serializer: S) -> Result<S::Ok, S::Error> {
    let scheme = if uri.scheme == AMQPScheme::AMQPS {
        "amqps"
    } else {
        "amqp"
    };
    let vhost = uri.vhost.replace('%', "%25").replace('/', "%2f");
    serializer.collect_str(&format_args!(
        "{scheme}://{}@{}:{}/{vhost}",
        uri.authority.userinfo.username, uri.authority.host, uri.authority.port
    ))
}

/// `rabbitmq`: a broker URL and its password, an exchange, a routing key,
/// and the CA file of an `amqps://` broker.
pub(super) const RABBITMQ_FIELDS: KindFields = KindFields {
    takes: &[
        "url",
        "ca_file",
        "exchange",
        "routing_key",
        "password_env",
        "password_file",
    ],
    refusal: "a rabbitmq target takes url, exchange, routing_key, password_env, password_file \
              and ca_file; this field is another kind's",
};

pub(super) fn rabbitmq_destination(
    file: &TargetFile,
    field: &str,
    base_dir: &Path,
) -> Result<RabbitmqDestination, ConfigError> {
    let sub = |name: &str| format!("{field}.{name}");
    let text = file
        .url
        .as_deref()
        .ok_or_else(|| ConfigError::invalid(sub("url"), "a rabbitmq target needs a url"))?;
    // The parser's message may quote the URL, and the URL may hold a
    // password: it is never repeated.
    let mut url: AMQPUri = text.parse().map_err(|_| {
        ConfigError::invalid(
            sub("url"),
            "must be an amqp:// or amqps:// URL (amqp://user@host:5672/vhost, `%2f` for the \
             vhost `/`)",
        )
    })?;
    // The parser fills in `guest` for a URL without user or password, so
    // whether the URL holds one is read from the text.
    let in_url = if url_has_password(text) {
        std::mem::take(&mut url.authority.userinfo.password)
    } else {
        String::new()
    };
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
    let password = match (in_url.is_empty(), from_fields) {
        (true, source) => source,
        (false, None) => Some(SecretSource::Inline(SecretString::from(in_url))),
        (false, Some(source)) => {
            return Err(ConfigError::invalid(
                source.field_name(&sub("password")),
                "the url holds a password already: set one or the other",
            ))
        }
    };
    if file.ca_file.is_some() && url.scheme != AMQPScheme::AMQPS {
        return Err(ConfigError::invalid(
            sub("ca_file"),
            "only amqps:// targets use a ca_file",
        ));
    }
    let exchange = file.exchange.clone().ok_or_else(|| {
        ConfigError::invalid(
            sub("exchange"),
            "a rabbitmq target needs an exchange (\"\" for the default exchange)",
        )
    })?;
    ShortString::try_new(exchange.as_str())
        .map_err(|_| ConfigError::invalid(sub("exchange"), "is longer than 255 bytes"))?;
    let routing_key = file.routing_key.as_deref().ok_or_else(|| {
        ConfigError::invalid(sub("routing_key"), "a rabbitmq target needs a routing_key")
    })?;
    let routing_key = NameTemplate::parse(routing_key)
        .map_err(|why| ConfigError::invalid(sub("routing_key"), why))?;
    Ok(RabbitmqDestination {
        url,
        password,
        exchange,
        routing_key,
        ca_file: file.ca_file.as_ref().map(|ca| base_dir.join(ca)),
        timeout: positive(file.timeout, &sub("timeout"))?,
    })
}

/// Whether `url` (`scheme://[user[:password]@]host…`) writes a password.
fn url_has_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}
