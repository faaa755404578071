//! `[telemetry.otlp]`, as parsed (the `*File` structs) and checked: where
//! OpenTelemetry traces are exported (see `crate::traces`). Absent, nothing
//! is traced; present, the standard `OTEL_*` variables fill in what it
//! leaves out (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`).

use std::collections::BTreeMap;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::ConfigError;

/// The checked `[telemetry]` section.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Telemetry {
    /// `None`: traces are off.
    pub otlp: Option<Otlp>,
}

/// Where and how spans are exported.
#[derive(Debug, Clone, Serialize)]
pub struct Otlp {
    /// The collector's base URL (`/v1/traces` is appended); `None` takes
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`,
    /// else `http://localhost:4318`.
    pub endpoint: Option<String>,
    /// Sent with every export (a collector's API key); never printed.
    #[serde(skip_serializing)]
    pub headers: BTreeMap<String, SecretString>,
    /// The share of new traces (not parented by a provider's sampled
    /// `traceparent`) that are recorded; `None` takes `OTEL_TRACES_SAMPLER`.
    pub sample_ratio: Option<f64>,
    /// `service.name` of every span; `None` takes `OTEL_SERVICE_NAME`, else
    /// `hookinbox`.
    pub service_name: Option<String>,
}

impl Telemetry {
    pub(super) fn from_file(file: TelemetryFile) -> Result<Telemetry, ConfigError> {
        let Some(otlp) = file.otlp else {
            return Ok(Telemetry { otlp: None });
        };
        if otlp.protocol != OtlpProtocol::HttpProtobuf {
            return Err(ConfigError::invalid(
                "telemetry.otlp.protocol",
                "only \"http/protobuf\" is built in (no gRPC client)",
            ));
        }
        if let Some(ratio) = otlp.sample_ratio {
            if !(0.0..=1.0).contains(&ratio) {
                return Err(ConfigError::invalid(
                    "telemetry.otlp.sample_ratio",
                    "must be between 0.0 and 1.0",
                ));
            }
        }
        if let Some(endpoint) = &otlp.endpoint {
            let uri: Result<hyper::Uri, _> = endpoint.parse();
            let usable = uri.is_ok_and(|uri| {
                matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some()
            });
            if !usable {
                return Err(ConfigError::invalid(
                    "telemetry.otlp.endpoint",
                    "must be an http:// or https:// URL",
                ));
            }
        }
        Ok(Telemetry {
            otlp: Some(Otlp {
                endpoint: otlp.endpoint,
                headers: otlp.headers,
                sample_ratio: otlp.sample_ratio,
                service_name: otlp.service_name,
            }),
        })
    }
}

/// `[telemetry]`: signals sent out of the process.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryFile {
    /// OpenTelemetry traces over OTLP; off when absent.
    pub otlp: Option<OtlpFile>,
}

/// `[telemetry.otlp]`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OtlpFile {
    /// The collector's base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// (`http://collector:4318`); spans go to `{endpoint}/v1/traces`.
    pub endpoint: Option<String>,
    /// `"http/protobuf"` (the only one built in).
    #[serde(default)]
    pub protocol: OtlpProtocol,
    /// Headers sent with every export, e.g. a vendor's API key: values
    /// are secrets (`Debug` redacted, never printed by `config check`).
    #[serde(default, skip_serializing)]
    pub headers: BTreeMap<String, SecretString>,
    /// Share of new traces recorded, 0.0 to 1.0; a provider's sampled
    /// `traceparent` is always followed.
    pub sample_ratio: Option<f64>,
    /// The `service.name` resource attribute.
    pub service_name: Option<String>,
}

/// The OTLP transport.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum OtlpProtocol {
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    #[serde(rename = "grpc")]
    Grpc,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::parse;

    const BASE: &str = r#"
[encryption]
allow_plaintext = true
[[endpoint]]
id = "lab"
provider = "lab"
[[endpoint.secret]]
version = "v1"
value = "lab-secret-0001"
"#;

    fn with(telemetry: &str) -> Result<super::Telemetry, String> {
        parse(&format!("{BASE}\n{telemetry}"), Path::new("/etc/hookinbox"))
            .map(|settings| settings.telemetry)
            .map_err(|error| error.to_string())
    }

    #[test]
    fn traces_are_off_without_the_section() {
        assert!(with("").unwrap().otlp.is_none());
    }

    #[test]
    fn a_full_section_is_taken_and_its_headers_never_shown() {
        let telemetry = with(
            r#"[telemetry.otlp]
endpoint = "https://collector.example:4318"
protocol = "http/protobuf"
headers = { "x-api-key" = "otlp-key-M4RK3R" }
sample_ratio = 0.25
service_name = "inbox""#,
        )
        .unwrap();
        let otlp = telemetry.otlp.as_ref().unwrap();
        assert_eq!(otlp.sample_ratio, Some(0.25));
        assert_eq!(otlp.service_name.as_deref(), Some("inbox"));
        assert!(!format!("{telemetry:?}").contains("otlp-key-M4RK3R"));
        assert!(!serde_json::to_string(&telemetry)
            .unwrap()
            .contains("otlp-key-M4RK3R"));
    }

    #[test]
    fn grpc_a_bad_ratio_and_a_bad_url_are_refused_by_field() {
        let grpc = with("[telemetry.otlp]\nprotocol = \"grpc\"").unwrap_err();
        assert!(grpc.starts_with("telemetry.otlp.protocol:"), "{grpc}");
        let ratio = with("[telemetry.otlp]\nsample_ratio = 1.5").unwrap_err();
        assert!(ratio.starts_with("telemetry.otlp.sample_ratio:"), "{ratio}");
        let url = with("[telemetry.otlp]\nendpoint = \"collector:4318\"").unwrap_err();
        assert!(url.starts_with("telemetry.otlp.endpoint:"), "{url}");
    }
}
