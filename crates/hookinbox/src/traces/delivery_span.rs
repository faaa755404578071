//! The span of one delivery attempt, a child of the span stored with its
//! event (`inbox.trace_parent`: the ingress span, or the provider's own),
//! so any worker process, before or after a restart, continues the
//! event's trace. While the attempt runs, the target reads
//! [`propagation_headers`] to pass the trace on (`traceparent`), and may
//! [`record_status`] the status code its service answered.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

use hookinbox_store::LeasedDelivery;
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::KeyValue;
use opentelemetry_sdk::trace::Span;

use super::traceparent::TraceParent;

tokio::task_local! {
    static CURRENT: Arc<AttemptTrace>;
}

/// What a running attempt's target can read and record.
struct AttemptTrace {
    /// `traceparent` (and `tracestate`) as the target sends them.
    headers: Vec<(&'static str, String)>,
    status: AtomicU16,
}

/// No span when traces are off: the attempt then passes the event's
/// stored `traceparent` on unchanged, so the receiver still joins the
/// provider's trace.
pub struct DeliverySpan {
    span: Option<Span>,
    attempt: Option<Arc<AttemptTrace>>,
}

impl DeliverySpan {
    /// Starts the span of the attempt at `lease`, of an event stored with
    /// `trace_parent` (`None`: no trace, or the event is missing).
    pub fn start(lease: &LeasedDelivery, trace_parent: Option<&str>) -> DeliverySpan {
        let stored = trace_parent.and_then(TraceParent::parse);
        let Some(traces) = super::get() else {
            return DeliverySpan {
                span: None,
                attempt: stored.map(|span| {
                    Arc::new(AttemptTrace {
                        headers: TraceParent::headers(&span),
                        status: AtomicU16::new(0),
                    })
                }),
            };
        };
        let parent = match stored {
            Some(span) => opentelemetry::Context::new().with_remote_span_context(span),
            None => opentelemetry::Context::new(),
        };
        let span = traces
            .tracer()
            .span_builder(format!("deliver {}", lease.target))
            .with_kind(SpanKind::Producer)
            .with_attributes([
                KeyValue::new("hookinbox.endpoint", lease.endpoint_id.clone()),
                KeyValue::new("hookinbox.target", lease.target.clone()),
                KeyValue::new("hookinbox.inbox_id", lease.inbox_id.clone()),
                KeyValue::new("hookinbox.attempt", i64::from(lease.attempts) + 1),
            ])
            .start_with_context(traces.tracer(), &parent);
        let attempt = Arc::new(AttemptTrace {
            headers: TraceParent::headers(span.span_context()),
            status: AtomicU16::new(0),
        });
        DeliverySpan {
            span: Some(span),
            attempt: Some(attempt),
        }
    }

    /// Runs `attempt` with this span as the one its target passes on.
    pub async fn scope<F: std::future::Future>(&self, attempt: F) -> F::Output {
        match &self.attempt {
            Some(current) => CURRENT.scope(Arc::clone(current), attempt).await,
            None => attempt.await,
        }
    }

    /// Ends the span: `outcome` is `delivered`, `transient`, `permanent`
    /// or `lease_lost`; `error` the attempt's description of a failure
    /// (never a URL, body or secret).
    pub fn end(self, outcome: &'static str, error: Option<&str>) {
        let Some(mut span) = self.span else {
            return;
        };
        span.set_attribute(KeyValue::new("hookinbox.outcome", outcome));
        let status = self
            .attempt
            .map(|attempt| attempt.status.load(Ordering::Relaxed))
            .unwrap_or(0);
        if status != 0 {
            span.set_attribute(KeyValue::new(
                "http.response.status_code",
                i64::from(status),
            ));
        }
        if let Some(error) = error {
            span.set_status(Status::error(error.to_owned()));
        }
        span.end();
    }
}

/// The `traceparent` (and `tracestate`) a target sends with the running
/// attempt: the attempt span's, in the event's stored trace; the stored
/// one itself when traces are off; empty for an event with no trace or
/// outside an attempt.
pub fn propagation_headers() -> Vec<(&'static str, String)> {
    CURRENT
        .try_with(|current| current.headers.clone())
        .unwrap_or_default()
}

/// Records the status code the target's service answered the running attempt.
pub fn record_status(status: u16) {
    let _outside_an_attempt = CURRENT.try_with(|current| {
        current.status.store(status, Ordering::Relaxed);
    });
}
