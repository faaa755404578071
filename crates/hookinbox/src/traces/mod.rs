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
//! in `hookinbox_otlp_spans_dropped_total`.

mod bounded_export;
mod delivery_span;
mod export_client;
mod ingress_span;
mod traceparent;

use std::sync::OnceLock;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, SpanExporter as _};
use opentelemetry_sdk::Resource;
use secrecy::ExposeSecret;

pub use delivery_span::{propagation_headers, record_status, DeliverySpan};
pub use ingress_span::IngressSpan;

use crate::config::Otlp;

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
    let mut exporter = builder.build()?;
    let mut resource = Resource::builder();
    if let Some(name) = &otlp.service_name {
        resource = resource.with_service_name(name.clone());
    } else if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("hookinbox");
    }
    let resource = resource.build();
    exporter.set_resource(&resource);
    let (processor, flush) =
        bounded_export::BoundedExport::spawn(exporter, QUEUE_CAPACITY, BATCH_SIZE);
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
