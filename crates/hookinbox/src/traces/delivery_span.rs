//! The span of one delivery attempt, in the trace of the request that
//! accepted the event (while that is remembered: `EventTraces`). While the
//! attempt runs, the target reads [`propagation_headers`] to pass the
//! trace on (`traceparent`), and may [`record_status`] the status code its
//! service answered.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

use hookinbox_store::LeasedDelivery;
use opentelemetry::trace::{Span as _, SpanContext, SpanKind, Status, Tracer as _};
use opentelemetry::KeyValue;
use opentelemetry_sdk::trace::Span;

use super::traceparent::TraceParent;

tokio::task_local! {
    static CURRENT: Arc<AttemptTrace>;
}

/// What a running attempt's target can read and record.
struct AttemptTrace {
    span: SpanContext,
    status: AtomicU16,
}

/// A no-op when traces are off.
pub struct DeliverySpan {
    span: Option<Span>,
    attempt: Option<Arc<AttemptTrace>>,
}

impl DeliverySpan {
    /// Starts the span of the attempt at `lease`.
    pub fn start(lease: &LeasedDelivery) -> DeliverySpan {
        let Some(traces) = super::get() else {
            return DeliverySpan {
                span: None,
                attempt: None,
            };
        };
        let parent = super::ingress_span::parent_of(&lease.inbox_id);
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
            span: span.span_context().clone(),
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
/// attempt; empty when traces are off or outside an attempt.
pub fn propagation_headers() -> Vec<(&'static str, String)> {
    CURRENT
        .try_with(|current| TraceParent::headers(&current.span))
        .unwrap_or_default()
}

/// Records the status code the target's service answered the running attempt.
pub fn record_status(status: u16) {
    let _outside_an_attempt = CURRENT.try_with(|current| {
        current.status.store(status, Ordering::Relaxed);
    });
}
