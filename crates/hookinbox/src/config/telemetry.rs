//! `[telemetry.otlp]`, as parsed (the `*File` structs) and checked: where
//! OpenTelemetry traces are exported (see `crate::traces`). Absent, nothing
//! is traced; present, the standard `OTEL_*` variables fill in what it
//! leaves out (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`), read when traces are
//! set up, not here.

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
    /// The collector's base URL (over HTTP `/v1/traces` is appended; over
    /// gRPC it is used as it is); `None` takes
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`,
    /// else `http://localhost:4318` (HTTP) or `http://localhost:4317` (gRPC).
    pub endpoint: Option<String>,
    /// The transport; `None` takes `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, else HTTP/protobuf.
    pub protocol: Option<OtlpProtocol>,
    /// Sent with every export (a collector's API key), as HTTP headers or
    /// gRPC metadata; never printed.
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
        if otlp.protocol == Some(OtlpProtocol::Grpc) {
            crate::traces::grpc_metadata(&otlp.headers).map_err(|error| {
                ConfigError::invalid("telemetry.otlp.headers", error.to_string())
            })?;
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
                protocol: otlp.protocol,
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
    /// (`http://collector:4318`); over HTTP spans go to
    /// `{endpoint}/v1/traces`, over gRPC to the endpoint itself
    /// (`http://collector:4317`).
    pub endpoint: Option<String>,
    /// `"http/protobuf"` or `"grpc"`; unset, `OTEL_EXPORTER_OTLP_PROTOCOL`
    /// decides, else `"http/protobuf"`.
    pub protocol: Option<OtlpProtocol>,
    /// Headers sent with every export, e.g. a vendor's API key (gRPC
    /// metadata over gRPC, so names must be valid metadata keys): values
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
    /// Protobuf posted to `{endpoint}/v1/traces`, through the service's
    /// own hyper client.
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// The OTLP `TraceService` over gRPC (tonic's client).
    #[serde(rename = "grpc")]
    Grpc,
}

impl OtlpProtocol {
    /// The transport an `OTEL_EXPORTER_OTLP_*PROTOCOL` value names, if it
    /// is one built in (`http/json` is not).
    pub fn from_env_value(value: &str) -> Option<OtlpProtocol> {
        match value.trim() {
            "http/protobuf" => Some(OtlpProtocol::HttpProtobuf),
            "grpc" => Some(OtlpProtocol::Grpc),
            _ => None,
        }
    }
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
    fn grpc_is_taken_with_its_headers_as_metadata() {
        let telemetry = with(
            r#"[telemetry.otlp]
endpoint = "https://collector.example:4317"
protocol = "grpc"
headers = { "X-API-Key" = "otlp-key-M4RK3R" }"#,
        )
        .unwrap();
        let otlp = telemetry.otlp.unwrap();
        assert_eq!(otlp.protocol, Some(super::OtlpProtocol::Grpc));
        assert_eq!(otlp.headers.len(), 1);
        let unset = with("[telemetry.otlp]").unwrap().otlp.unwrap();
        assert_eq!(unset.protocol, None, "left to OTEL_EXPORTER_OTLP_PROTOCOL");
    }

    #[test]
    fn a_header_that_is_not_grpc_metadata_is_refused_by_field_without_its_value() {
        for headers in [
            r#"{ "x api key" = "otlp-key-M4RK3R" }"#,
            r#"{ "x-token-bin" = "otlp-key-M4RK3R" }"#,
            r#"{ "x-api-key" = "otlp-key-M4RK3R\n" }"#,
        ] {
            let refused = with(&format!(
                "[telemetry.otlp]\nprotocol = \"grpc\"\nheaders = {headers}"
            ))
            .unwrap_err();
            assert!(refused.starts_with("telemetry.otlp.headers:"), "{refused}");
            assert!(!refused.contains("otlp-key-M4RK3R"), "{refused}");
        }
    }

    #[test]
    fn the_protocol_variable_names_a_built_in_transport_or_none() {
        use super::OtlpProtocol;
        assert_eq!(
            OtlpProtocol::from_env_value("grpc"),
            Some(OtlpProtocol::Grpc)
        );
        assert_eq!(
            OtlpProtocol::from_env_value(" http/protobuf "),
            Some(OtlpProtocol::HttpProtobuf)
        );
        assert_eq!(OtlpProtocol::from_env_value("http/json"), None);
        assert_eq!(OtlpProtocol::from_env_value(""), None);
    }

    #[test]
    fn a_bad_ratio_and_a_bad_url_are_refused_by_field() {
        let ratio = with("[telemetry.otlp]\nsample_ratio = 1.5").unwrap_err();
        assert!(ratio.starts_with("telemetry.otlp.sample_ratio:"), "{ratio}");
        let url = with("[telemetry.otlp]\nendpoint = \"collector:4318\"").unwrap_err();
        assert!(url.starts_with("telemetry.otlp.endpoint:"), "{url}");
    }
}
