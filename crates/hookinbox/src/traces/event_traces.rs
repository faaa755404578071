//! The ingress span of each event accepted lately, by inbox id, so its
//! delivery attempts join the same trace. Bounded: the oldest is forgotten
//! first, and an event accepted before a restart (or forgotten) is
//! delivered in a trace of its own, linked to nothing.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use opentelemetry::trace::SpanContext;

/// Events remembered at most (about 100 bytes each).
const CAPACITY: usize = 100_000;

#[derive(Default)]
pub struct EventTraces {
    inner: Mutex<Remembered>,
}

#[derive(Default)]
struct Remembered {
    by_id: HashMap<String, SpanContext>,
    order: VecDeque<String>,
}

impl EventTraces {
    pub fn new() -> EventTraces {
        EventTraces::default()
    }

    /// Remembers the span that accepted the event `inbox_id`.
    pub fn remember(&self, inbox_id: &str, span: SpanContext) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.by_id.insert(inbox_id.to_owned(), span).is_none() {
            inner.order.push_back(inbox_id.to_owned());
        }
        while inner.order.len() > CAPACITY {
            if let Some(oldest) = inner.order.pop_front() {
                inner.by_id.remove(&oldest);
            }
        }
    }

    /// The span that accepted `inbox_id`, if still remembered.
    pub fn of(&self, inbox_id: &str) -> Option<SpanContext> {
        self.inner.lock().ok()?.by_id.get(inbox_id).cloned()
    }
}
