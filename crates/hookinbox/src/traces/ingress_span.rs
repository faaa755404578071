//! The span of one ingress request: a child of the provider's
//! `traceparent` when it sent a valid one, with the verify and commit
//! steps as events. Its attributes are names and numbers only — endpoint,
//! provider, outcome and reason, body bytes, matched secret version, inbox
//! id — never a secret, a header value or the payload.

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::KeyValue;
use opentelemetry_sdk::trace::Span;

use super::traceparent::TraceParent;

/// A no-op when traces are off.
pub struct IngressSpan {
    span: Option<Span>,
}

impl IngressSpan {
    /// Starts the span of a request with these headers.
    pub fn start(headers: &hyper::HeaderMap) -> IngressSpan {
        let Some(traces) = super::get() else {
            return IngressSpan { span: None };
        };
        let parent = TraceParent::extract(headers);
        let span = traces
            .tracer()
            .span_builder("POST /hooks/{endpoint_id}")
            .with_kind(SpanKind::Server)
            .start_with_context(traces.tracer(), &parent);
        IngressSpan { span: Some(span) }
    }

    /// The request was verified against `endpoint`'s `provider` with the
    /// secret version `secret_version`.
    pub fn verified(&mut self, provider: &str, secret_version: &str, body_bytes: usize) {
        if let Some(span) = &mut self.span {
            span.set_attributes([
                KeyValue::new("hookinbox.provider", provider.to_owned()),
                KeyValue::new("hookinbox.secret_version", secret_version.to_owned()),
                KeyValue::new("hookinbox.body_bytes", body_bytes as i64),
            ]);
            span.add_event("verified", Vec::new());
        }
    }

    /// The event was committed (or found committed) as `inbox_id`. A new
    /// event's deliveries join this span's trace.
    pub fn committed(&mut self, inbox_id: &str, duplicate: bool) {
        let Some(span) = &mut self.span else {
            return;
        };
        span.set_attribute(KeyValue::new("hookinbox.inbox_id", inbox_id.to_owned()));
        span.add_event("committed", Vec::new());
        if !duplicate {
            if let Some(traces) = super::get() {
                traces
                    .events()
                    .remember(inbox_id, span.span_context().clone());
            }
        }
    }

    /// Ends the span with how the request was answered.
    pub fn answered(
        self,
        endpoint: &str,
        outcome: &'static str,
        reason: &'static str,
        status: u16,
    ) {
        let Some(mut span) = self.span else {
            return;
        };
        span.set_attributes([
            KeyValue::new("hookinbox.endpoint", endpoint.to_owned()),
            KeyValue::new("hookinbox.outcome", outcome),
            KeyValue::new("http.response.status_code", i64::from(status)),
        ]);
        if !reason.is_empty() {
            span.set_attribute(KeyValue::new("hookinbox.reason", reason));
        }
        if status >= 500 {
            span.set_status(Status::error(reason.to_owned()));
        }
        span.add_event("answered", Vec::new());
        span.end();
    }
}

/// The trace context the ingress span of `inbox_id` left, as a parent.
pub(super) fn parent_of(inbox_id: &str) -> opentelemetry::Context {
    match super::get().and_then(|traces| traces.events().of(inbox_id)) {
        Some(span) => opentelemetry::Context::new().with_remote_span_context(span),
        None => opentelemetry::Context::new(),
    }
}
