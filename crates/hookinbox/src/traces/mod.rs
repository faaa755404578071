//! OpenTelemetry traces (docs/architecture.md §7, Traces): one span per ingress
//! request, parented on the provider's W3C `traceparent`, and one per
//! delivery attempt in the event's trace (stored with the event, so any
//! worker process continues it), which each delivery passes on as its own
//! `traceparent` (HTTP header, NATS/AMQP/Redis header, MQTT user property).
//!
//! Spans are made through the OpenTelemetry API directly, not through a
//! `tracing` layer: each has an explicit parent (a remote one at ingress,
//! the event's at delivery), and nothing else the process logs becomes a
//! span. Off (`[telemetry.otlp]` absent), [`get`] is `None` and no span is
//! made at all.
//!
//! Exporting never blocks a request: finished spans go into a bounded queue
//! ([`bounded_export`]); a full queue or a failed export drops them, counted
//! in `hookinbox_otlp_spans_dropped_total`. The queue feeds either exporter:
//! OTLP/HTTP protobuf through the service's own hyper client
//! ([`export_client`]), or OTLP/gRPC through tonic's client
//! (`protocol = "grpc"`), which spawns its connection's tasks on the Tokio
//! runtime [`install`] runs in.

mod bounded_export;
mod delivery_span;
mod export_client;
mod grpc_export;
mod ingress_span;
mod traceparent;

use std::sync::OnceLock;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, SpanExporter};
use opentelemetry_sdk::Resource;
use secrecy::ExposeSecret;

pub use delivery_span::{propagation_headers, record_status, DeliverySpan};
pub(crate) use grpc_export::grpc_metadata;
pub use grpc_export::InvalidMetadata;
pub use ingress_span::IngressSpan;

use crate::config::{Otlp, OtlpProtocol};

/// Finished spans waiting for export at most; more are dropped, counted.
const QUEUE_CAPACITY: usize = 8192;
/// Spans sent in one export request at most.
const BATCH_SIZE: usize = 512;

static TRACES: OnceLock<Traces> = OnceLock::new();

/// The process's tracer, when traces are on.
pub fn get() -> Option<&'static Traces> {
    TRACES.get()
}

/// Why traces could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TracesError {
    #[error("{0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    #[error("headers: {0}")]
    Metadata(#[from] InvalidMetadata),
    #[error("the trace exporter was already set up")]
    AlreadyInstalled,
}

/// The tracer and what spans share.
pub struct Traces {
    tracer: SdkTracer,
    flush: bounded_export::Flush,
}

/// Sets up the exporter; must run inside the Tokio runtime (the export
/// task is spawned on it).
pub fn install(otlp: &Otlp) -> Result<(), TracesError> {
    let mut resource = Resource::builder();
    if let Some(name) = &otlp.service_name {
        resource = resource.with_service_name(name.clone());
    } else if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("hookinbox");
    }
    let resource = resource.build();
    let (processor, flush) = match protocol(otlp.protocol) {
        OtlpProtocol::HttpProtobuf => export_queue(http_exporter(otlp)?, &resource),
        OtlpProtocol::Grpc => export_queue(grpc_export::exporter(otlp)?, &resource),
    };
    let mut provider = SdkTracerProvider::builder()
        .with_resource(resource)
        .with_span_processor(processor);
    if let Some(ratio) = otlp.sample_ratio {
        provider = provider.with_sampler(Sampler::ParentBased(Box::new(
            Sampler::TraceIdRatioBased(ratio),
        )));
    }
    let provider = provider.build();
    let traces = Traces {
        tracer: provider.tracer("hookinbox"),
        flush,
    };
    TRACES
        .set(traces)
        .map_err(|_| TracesError::AlreadyInstalled)
}

/// The transport: the config's, else `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or
/// `OTEL_EXPORTER_OTLP_PROTOCOL`, else HTTP/protobuf. A variable naming one
/// that is not built in (`http/json`) is logged and HTTP/protobuf used, as
/// before the variable was read.
fn protocol(configured: Option<OtlpProtocol>) -> OtlpProtocol {
    if let Some(protocol) = configured {
        return protocol;
    }
    let from_env = [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]
    .into_iter()
    .find_map(|variable| {
        let value = std::env::var(variable).ok().filter(|v| !v.is_empty())?;
        Some((variable, value))
    });
    let Some((variable, value)) = from_env else {
        return OtlpProtocol::HttpProtobuf;
    };
    OtlpProtocol::from_env_value(&value).unwrap_or_else(|| {
        tracing::warn!(
            message = "OTLP protocol not built in; exporting over http/protobuf.",
            variable,
            %value
        );
        OtlpProtocol::HttpProtobuf
    })
}

fn export_queue<E: SpanExporter + 'static>(
    mut exporter: E,
    resource: &Resource,
) -> (bounded_export::BoundedExport, bounded_export::Flush) {
    exporter.set_resource(resource);
    bounded_export::BoundedExport::spawn(exporter, QUEUE_CAPACITY, BATCH_SIZE)
}

/// OTLP/HTTP protobuf: posted to `{endpoint}/v1/traces` by our own client.
fn http_exporter(otlp: &Otlp) -> Result<opentelemetry_otlp::SpanExporter, TracesError> {
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(export_client::ExportClient::new())
        .with_headers(
            otlp.headers
                .iter()
                .map(|(name, value)| (name.clone(), value.expose_secret().to_owned()))
                .collect(),
        );
    if let Some(endpoint) = &otlp.endpoint {
        builder = builder.with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')));
    }
    Ok(builder.build()?)
}

/// Longest a clean stop waits for the last spans to be exported.
const FLUSH_AT_STOP: std::time::Duration = std::time::Duration::from_secs(5);

/// Exports what is queued, for a clean stop: at most [`FLUSH_AT_STOP`].
pub async fn flush() {
    if let Some(traces) = get() {
        traces.flush.run(FLUSH_AT_STOP).await;
    }
}

impl Traces {
    pub(crate) fn tracer(&self) -> &SdkTracer {
        &self.tracer
    }
}
