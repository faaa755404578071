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

    /// The `traceparent` value naming `span`, as an event stores it
    /// (`inbox.trace_parent`); `None` for an invalid span.
    pub fn value(span: &SpanContext) -> Option<String> {
        if !span.is_valid() {
            return None;
        }
        Self::headers(span)
            .into_iter()
            .find(|(name, _)| *name == "traceparent")
            .map(|(_, value)| value)
    }

    /// The `traceparent` a request names, if valid: the provider's span.
    pub fn sent(headers: &hyper::HeaderMap) -> Option<String> {
        Self::value(Self::extract(headers).span().span_context())
    }

    /// The remote span a stored `traceparent` names, if it is valid.
    pub fn parse(value: &str) -> Option<SpanContext> {
        let carrier = HashMap::from([("traceparent".to_owned(), value.to_owned())]);
        let span = TraceContextPropagator::new()
            .extract(&carrier)
            .span()
            .span_context()
            .clone();
        span.is_valid().then_some(span)
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
    fn a_stored_traceparent_parses_back_to_its_span() {
        let stored = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let span = TraceParent::parse(stored).unwrap();
        assert_eq!(
            span.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(TraceParent::value(&span).as_deref(), Some(stored));
        assert!(TraceParent::parse("00-zz-01").is_none());
        assert!(
            TraceParent::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none()
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
