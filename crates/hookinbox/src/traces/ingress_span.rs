//! The span of one ingress request: a child of the provider's
//! `traceparent` when it sent a valid one, with the verify and commit
//! steps as events. Its attributes are names and numbers only — endpoint,
//! provider, outcome and reason, body bytes, matched secret version, inbox
//! id — never a secret, a header value or the payload.
//!
//! It also says which trace the event is in ([`IngressSpan::trace_parent`]),
//! stored with the event so that every delivery — by this process, by a
//! separate `hookinbox work`, after a restart — continues it.

use opentelemetry::trace::{Span as _, SpanKind, Status, Tracer as _};
use opentelemetry::KeyValue;
use opentelemetry_sdk::trace::Span;

use super::traceparent::TraceParent;

/// A no-op when traces are off, but for the provider's trace it keeps.
pub struct IngressSpan {
    span: Option<Span>,
    trace_parent: Option<String>,
}

impl IngressSpan {
    /// Starts the span of a request with these headers.
    pub fn start(headers: &hyper::HeaderMap) -> IngressSpan {
        let Some(traces) = super::get() else {
            return IngressSpan {
                span: None,
                trace_parent: TraceParent::sent(headers),
            };
        };
        let parent = TraceParent::extract(headers);
        let span = traces
            .tracer()
            .span_builder("POST /hooks/{endpoint_id}")
            .with_kind(SpanKind::Server)
            .start_with_context(traces.tracer(), &parent);
        IngressSpan {
            trace_parent: TraceParent::value(span.span_context()),
            span: Some(span),
        }
    }

    /// The `traceparent` the accepted event is stored with, which its
    /// deliveries continue: this span's when traces are on (in the
    /// provider's trace when it sent one), else the provider's own span;
    /// `None` when there is neither.
    pub fn trace_parent(&self) -> Option<String> {
        self.trace_parent.clone()
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

    /// The event was committed (or found committed) as `inbox_id`.
    pub fn committed(&mut self, inbox_id: &str) {
        let Some(span) = &mut self.span else {
            return;
        };
        span.set_attribute(KeyValue::new("hookinbox.inbox_id", inbox_id.to_owned()));
        span.add_event("committed", Vec::new());
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
