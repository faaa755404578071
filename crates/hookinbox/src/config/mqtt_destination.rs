//! An `mqtt` target's settings, checked: the broker, the topic template,
//! the protocol version and the credentials (`delivery::mqtt_target`
//! publishes with them).

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper::Uri;
use serde::{Deserialize, Serialize, Serializer};

use super::checks::positive;
use super::mqtt_topic::TopicTemplate;
use super::secret_source::{SecretFields, SecretSource};
use super::target::TargetFile;
use super::ConfigError;

/// A broker's default port without TLS, and with it (IANA).
const MQTT_PORT: u16 = 1883;
const MQTTS_PORT: u16 = 8883;

/// An `mqtt` target: where and how it publishes.
#[derive(Debug, Clone, Serialize)]
pub struct MqttDestination {
    /// The broker, as written (`mqtt://host:port` or `mqtts://host:port`).
    #[serde(rename = "url", serialize_with = "serialize_broker")]
    pub broker: MqttBroker,
    /// Where each event is published (see `TopicTemplate`).
    pub topic: TopicTemplate,
    /// The MQTT version spoken to the broker.
    pub protocol: MqttProtocol,
    /// The user name sent in CONNECT, if any.
    pub username: Option<String>,
    /// Where the password sent in CONNECT comes from, if any.
    pub password: Option<SecretSource>,
    /// Only on `mqtts://`: the only roots trusted for this broker.
    pub ca_file: Option<PathBuf>,
    /// How long one attempt waits for a connection and the PUBACK.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

/// Host and port of a broker, and whether TLS is spoken to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MqttBroker {
    /// A name or an IP address (without brackets).
    pub host: String,
    /// The URL's port, or the scheme's (1883, 8883).
    pub port: u16,
    /// `mqtts://`.
    pub tls: bool,
}

fn serialize_broker<S: Serializer>(broker: &MqttBroker, serializer: S) -> Result<S::Ok, S::Error> {
    let scheme = if broker.tls { "mqtts" } else { "mqtt" };
    let host = if broker.host.contains(':') {
        format!("[{}]", broker.host)
    } else {
        broker.host.clone()
    };
    serializer.collect_str(&format_args!("{scheme}://{host}:{}", broker.port))
}

/// `protocol`: MQTT 5 (user properties, reason codes on PUBACK) or 3.1.1
/// (no properties: the metadata is not sent, and a broker refusing a
/// publish cannot say so).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(try_from = "ProtocolSpelling")]
pub enum MqttProtocol {
    /// MQTT 5.0, the default.
    #[default]
    V5,
    /// MQTT 3.1.1.
    V311,
}

/// How `protocol` may be written: `5`, `"5"`, `"3.1.1"` (or its protocol
/// level, `4`).
#[derive(Deserialize)]
#[serde(untagged)]
enum ProtocolSpelling {
    Number(i64),
    Text(String),
}

impl TryFrom<ProtocolSpelling> for MqttProtocol {
    type Error = String;

    fn try_from(spelling: ProtocolSpelling) -> Result<MqttProtocol, String> {
        match spelling {
            ProtocolSpelling::Number(5) => Ok(MqttProtocol::V5),
            ProtocolSpelling::Number(4) => Ok(MqttProtocol::V311),
            ProtocolSpelling::Text(text) if text == "5" || text == "5.0" => Ok(MqttProtocol::V5),
            ProtocolSpelling::Text(text) if text == "3.1.1" || text == "4" => {
                Ok(MqttProtocol::V311)
            }
            _ => Err("protocol must be 5 or \"3.1.1\"".to_owned()),
        }
    }
}

impl MqttProtocol {
    /// As the documentation spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            MqttProtocol::V5 => "5",
            MqttProtocol::V311 => "3.1.1",
        }
    }
}

impl Serialize for MqttProtocol {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Builds an `mqtt` target's settings from its table; `field` names it in
/// errors (`endpoint[0].target[1]`).
pub(super) fn mqtt_destination(
    file: &TargetFile,
    field: &str,
    base_dir: &Path,
) -> Result<MqttDestination, ConfigError> {
    let sub = |name: &str| format!("{field}.{name}");
    let url = file
        .url
        .as_deref()
        .ok_or_else(|| ConfigError::invalid(sub("url"), "an mqtt target needs a url"))?;
    let broker = mqtt_broker(url).map_err(|why| ConfigError::invalid(sub("url"), why))?;
    let topic = file
        .topic
        .as_deref()
        .ok_or_else(|| ConfigError::invalid(sub("topic"), "an mqtt target needs a topic"))?;
    let topic =
        TopicTemplate::parse(topic).map_err(|why| ConfigError::invalid(sub("topic"), why))?;
    if file.ca_file.is_some() && !broker.tls {
        return Err(ConfigError::invalid(
            sub("ca_file"),
            "only mqtts:// targets use a ca_file",
        ));
    }
    let password = SecretSource::from_fields(
        SecretFields {
            name: "password",
            inline: file.password.as_ref(),
            env: file.password_env.as_deref(),
            file: file.password_file.as_deref(),
        },
        field,
        base_dir,
    )?;
    if password.is_some() && file.username.is_none() {
        return Err(ConfigError::invalid(
            sub("username"),
            "a password is sent with a username: set username too",
        ));
    }
    if file.username.as_deref() == Some("") {
        return Err(ConfigError::invalid(sub("username"), "is empty"));
    }
    Ok(MqttDestination {
        broker,
        topic,
        protocol: file.protocol.unwrap_or_default(),
        username: file.username.clone(),
        password,
        ca_file: file.ca_file.as_ref().map(|ca| base_dir.join(ca)),
        timeout: positive(file.timeout, &sub("timeout"))?,
    })
}

/// The broker of an mqtt target's `url`. Messages never repeat the URL: it
/// might hold a password.
fn mqtt_broker(url: &str) -> Result<MqttBroker, String> {
    const SHAPE: &str = "must be an mqtt://host:port or mqtts://host:port URL";
    let uri: Uri = url.parse().map_err(|_| SHAPE.to_owned())?;
    let tls = match uri.scheme_str() {
        Some("mqtt") => false,
        Some("mqtts") => true,
        _ => return Err(SHAPE.into()),
    };
    let authority = uri.authority().ok_or(SHAPE)?;
    if authority.as_str().contains('@') {
        return Err(
            "the URL holds credentials: put them in username and password_env (or \
             password_file), which are never printed"
                .into(),
        );
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err(SHAPE.into());
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        return Err("the URL has no host".into());
    }
    let port = authority
        .port_u16()
        .unwrap_or(if tls { MQTTS_PORT } else { MQTT_PORT });
    Ok(MqttBroker {
        host: host.to_owned(),
        port,
        tls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_urls() {
        assert_eq!(
            mqtt_broker("mqtt://127.0.0.1:1884").unwrap(),
            MqttBroker {
                host: "127.0.0.1".into(),
                port: 1884,
                tls: false
            }
        );
        assert_eq!(mqtt_broker("mqtt://broker").unwrap().port, 1883);
        let tls = mqtt_broker("mqtts://broker.internal/").unwrap();
        assert!(tls.tls);
        assert_eq!(tls.port, 8883);
        assert_eq!(mqtt_broker("mqtt://[::1]:1883").unwrap().host, "::1");
        for bad in [
            "http://broker",
            "broker:1883",
            "mqtt://b/topic",
            "mqtt://b?x=1",
            "",
        ] {
            assert!(mqtt_broker(bad).is_err(), "{bad}");
        }
        let refusal = mqtt_broker("mqtt://user:hunter2@broker").unwrap_err();
        assert!(refusal.contains("credentials"), "{refusal}");
        assert!(!refusal.contains("hunter2"), "{refusal}");
    }

    #[test]
    fn protocol_spellings() {
        let parse = |text: &str| -> Result<MqttProtocol, String> {
            #[derive(Deserialize)]
            struct Table {
                protocol: MqttProtocol,
            }
            toml::from_str::<Table>(&format!("protocol = {text}"))
                .map(|table| table.protocol)
                .map_err(|e| e.to_string())
        };
        assert_eq!(parse("5"), Ok(MqttProtocol::V5));
        assert_eq!(parse("\"5\""), Ok(MqttProtocol::V5));
        assert_eq!(parse("\"3.1.1\""), Ok(MqttProtocol::V311));
        assert_eq!(parse("4"), Ok(MqttProtocol::V311));
        for bad in ["3", "\"3.1\""] {
            let error = parse(bad).unwrap_err();
            assert!(
                error.contains("protocol must be 5 or \"3.1.1\""),
                "{bad}: {error}"
            );
        }
    }
}
