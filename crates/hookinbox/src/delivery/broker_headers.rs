//! The metadata a broker target sends beside the raw body: the names and
//! values of the `nats` target's headers (`Idempotency-Key` = the inbox
//! id, `X-Hookinbox-Provider`, `-Endpoint`, `-Event-Id`, `-Event-Type`,
//! and `X-Hookinbox-Unsigned` when some of that metadata came from values
//! the provider's signature does not cover), and `traceparent` when traces
//! are on. A `rabbitmq` target sends
//! them as AMQP headers, a `redis_stream` target as a JSON object in the
//! entry's `headers` field. No Standard Webhooks signature: the broker
//! authenticates its consumers (docs/architecture.md §5).

use hookinbox_store::StoredEvent;

use super::http_target::unsigned_header;

/// The headers of `event`, in a fixed order.
pub fn broker_headers(event: &StoredEvent) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("Idempotency-Key", event.id.clone()),
        ("X-Hookinbox-Provider", event.provider.clone()),
        ("X-Hookinbox-Endpoint", event.endpoint_id.clone()),
        ("X-Hookinbox-Event-Id", event.provider_event_id.clone()),
    ];
    if let Some(event_type) = &event.event_type {
        headers.push(("X-Hookinbox-Event-Type", event_type.clone()));
    }
    if let Some(unsigned) = unsigned_header(&event.unsigned_metadata) {
        headers.push(("X-Hookinbox-Unsigned", unsigned));
    }
    // The running attempt's `traceparent`, so the consumer's spans join the
    // event's trace; nothing when traces are off (docs/architecture.md §7).
    headers.extend(crate::traces::propagation_headers());
    headers
}

/// The content type the provider sent, or `application/octet-stream`.
pub fn content_type(event: &StoredEvent) -> &str {
    event
        .content_type
        .as_deref()
        .unwrap_or("application/octet-stream")
}
