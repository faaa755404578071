//! The W3C `traceparent` header, read from a provider's request and written
//! on each delivery (https://www.w3.org/TR/trace-context/).

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt};
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;

/// A span context as the `traceparent` (and `tracestate`) headers carry it.
pub struct TraceParent;

impl TraceParent {
    /// The remote parent a request names, if it names a valid one.
    pub fn extract(headers: &hyper::HeaderMap) -> Context {
        let carrier: HashMap<String, String> = ["traceparent", "tracestate"]
            .into_iter()
            .filter_map(|name| {
                let value = headers.get(name)?.to_str().ok()?;
                Some((name.to_owned(), value.to_owned()))
            })
            .collect();
        TraceContextPropagator::new().extract(&carrier)
    }

    /// The headers that make `span` the parent of the receiver's spans:
    /// `traceparent`, and `tracestate` when there is one.
    pub fn headers(span: &SpanContext) -> Vec<(&'static str, String)> {
        let mut carrier: HashMap<String, String> = HashMap::new();
        let context = Context::new().with_remote_span_context(span.clone());
        TraceContextPropagator::new().inject_context(&context, &mut carrier);
        ["traceparent", "tracestate"]
            .into_iter()
            .filter_map(|name| Some((name, carrier.remove(name)?)))
            .filter(|(_, value)| !value.is_empty())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::TraceContextExt;

    use super::*;

    #[test]
    fn a_traceparent_read_is_written_back_unchanged() {
        let mut headers = hyper::HeaderMap::new();
        let sent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        headers.insert("traceparent", hyper::header::HeaderValue::from_static(sent));
        let context = TraceParent::extract(&headers);
        let span = context.span().span_context().clone();
        assert!(span.is_valid() && span.is_remote());
        assert_eq!(
            TraceParent::headers(&span),
            vec![("traceparent", sent.to_owned())]
        );
    }

    #[test]
    fn a_malformed_traceparent_names_no_parent() {
        let mut headers = hyper::HeaderMap::new();
        headers.insert(
            "traceparent",
            hyper::header::HeaderValue::from_static("00-zz-01"),
        );
        assert!(!TraceParent::extract(&headers).has_active_span());
    }
}
