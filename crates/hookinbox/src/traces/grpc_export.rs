//! OTLP/gRPC (`protocol = "grpc"`): tonic's client to the collector's
//! `TraceService`, fed by the same bounded queue as OTLP/HTTP
//! (docs/architecture.md §7, Traces).

use std::collections::BTreeMap;
use std::time::Duration;

use opentelemetry_otlp::{WithExportConfig, WithTonicConfig};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use opentelemetry_sdk::Resource;
use secrecy::{ExposeSecret, SecretString};
use tonic::metadata::{Ascii, MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::ClientTlsConfig;

use super::TracesError;
use crate::config::Otlp;

/// Longest one gRPC export may take, connection included (as over HTTP).
const GRPC_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// A configured header that cannot be sent as gRPC metadata; names the
/// header, never its value.
#[derive(Debug, thiserror::Error)]
pub enum InvalidMetadata {
    #[error("`{0}` is not a gRPC metadata key (an HTTP header name not ending in `-bin`)")]
    Key(String),
    #[error("the value of `{0}` is not gRPC metadata (visible ASCII only)")]
    Value(String),
}

/// OTLP/gRPC through tonic: the endpoint as given (a gRPC method has its
/// own path), the headers as metadata, and for an `https://` endpoint
/// rustls on ring with Mozilla's roots, as every target trusts by default.
pub(super) fn exporter(
    otlp: &Otlp,
) -> Result<WithDeadline<opentelemetry_otlp::SpanExporter>, TracesError> {
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_metadata(grpc_metadata(&otlp.headers)?)
        // Only an https:// endpoint (configured or from OTEL_*) uses it.
        .with_tls_config(ClientTlsConfig::new().with_webpki_roots());
    if let Some(endpoint) = &otlp.endpoint {
        builder = builder.with_endpoint(endpoint.clone());
    }
    Ok(WithDeadline(builder.build()?))
}

/// The configured headers as gRPC metadata (names lowercased), values
/// marked sensitive; the config check refuses what this refuses.
pub(crate) fn grpc_metadata(
    headers: &BTreeMap<String, SecretString>,
) -> Result<MetadataMap, InvalidMetadata> {
    let mut metadata = MetadataMap::new();
    for (name, value) in headers {
        let key = MetadataKey::<Ascii>::from_bytes(name.as_bytes())
            .map_err(|_| InvalidMetadata::Key(name.clone()))?;
        let mut value = MetadataValue::<Ascii>::try_from(value.expose_secret())
            .map_err(|_| InvalidMetadata::Value(name.clone()))?;
        value.set_sensitive(true);
        metadata.insert(key, value);
    }
    Ok(metadata)
}

/// Bounds each export of the gRPC exporter, the connection included:
/// tonic's own timeout starts once a connection is ready, so a collector
/// whose address drops packets would hold the export task for the
/// system's connect timeout (minutes) while the queue overflows. The HTTP
/// client has the same bound (`export_client`).
#[derive(Debug)]
pub(super) struct WithDeadline<E>(E);

impl<E: SpanExporter> SpanExporter for WithDeadline<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        tokio::time::timeout(GRPC_EXPORT_TIMEOUT, self.0.export(batch))
            .await
            .map_err(|_| OTelSdkError::Timeout(GRPC_EXPORT_TIMEOUT))?
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.0.set_resource(resource);
    }
}
