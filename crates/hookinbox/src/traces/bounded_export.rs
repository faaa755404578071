//! The span processor: finished spans go into a bounded queue that one
//! task drains in batches to the exporter. Ending a span never waits — a
//! full queue drops the span — and a failed export drops its batch; both
//! are counted in `hookinbox_otlp_spans_dropped_total{reason}`.

use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use tokio::sync::{mpsc, oneshot};

/// Longest a span waits in the queue before its batch is sent.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

enum Message {
    Span(Box<SpanData>),
    Flush(oneshot::Sender<()>),
}

#[derive(Debug)]
pub struct BoundedExport {
    queue: mpsc::Sender<Message>,
}

/// Waits for what is queued to be exported (a clean stop).
#[derive(Debug, Clone)]
pub struct Flush {
    queue: mpsc::Sender<Message>,
}

impl Flush {
    /// Returns once every span queued before the call was sent (or
    /// dropped), or after `within`.
    pub async fn run(&self, within: Duration) {
        let (done, finished) = oneshot::channel();
        let flushed = async {
            if self.queue.send(Message::Flush(done)).await.is_ok() {
                let _ = finished.await;
            }
        };
        let _late = tokio::time::timeout(within, flushed).await;
    }
}

impl BoundedExport {
    /// Spawns the export task on the current Tokio runtime.
    pub fn spawn<E: SpanExporter + 'static>(
        exporter: E,
        capacity: usize,
        batch_size: usize,
    ) -> (BoundedExport, Flush) {
        let (queue, receiver) = mpsc::channel(capacity);
        tokio::spawn(drain(exporter, receiver, batch_size));
        metrics::counter!("hookinbox_otlp_spans_dropped_total", "reason" => "queue_full")
            .absolute(0);
        metrics::counter!("hookinbox_otlp_spans_dropped_total", "reason" => "export_failed")
            .absolute(0);
        let flush = Flush {
            queue: queue.clone(),
        };
        (BoundedExport { queue }, flush)
    }
}

impl SpanProcessor for BoundedExport {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if self.queue.try_send(Message::Span(Box::new(span))).is_err() {
            metrics::counter!("hookinbox_otlp_spans_dropped_total", "reason" => "queue_full")
                .increment(1);
        }
    }

    /// Asks for an export of what is queued without waiting for it: the
    /// SDK calls this from runtime threads, which must not block. The
    /// service waits through [`Flush`] instead.
    fn force_flush(&self) -> OTelSdkResult {
        let (done, _not_awaited) = oneshot::channel();
        self.queue
            .try_send(Message::Flush(done))
            .map_err(|_| OTelSdkError::InternalFailure("export queue full".to_owned()))
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        self.force_flush()
    }
}

async fn drain<E: SpanExporter>(
    exporter: E,
    mut receiver: mpsc::Receiver<Message>,
    batch_size: usize,
) {
    let mut batch = Vec::with_capacity(batch_size);
    loop {
        let message = if batch.is_empty() {
            receiver.recv().await
        } else {
            match tokio::time::timeout(FLUSH_EVERY, receiver.recv()).await {
                Ok(message) => message,
                Err(_quiet) => {
                    export(&exporter, &mut batch).await;
                    continue;
                }
            }
        };
        match message {
            Some(Message::Span(span)) => {
                batch.push(*span);
                if batch.len() >= batch_size {
                    export(&exporter, &mut batch).await;
                }
            }
            Some(Message::Flush(done)) => {
                export(&exporter, &mut batch).await;
                let _ = done.send(());
            }
            None => {
                export(&exporter, &mut batch).await;
                return;
            }
        }
    }
}

async fn export<E: SpanExporter>(exporter: &E, batch: &mut Vec<SpanData>) {
    if batch.is_empty() {
        return;
    }
    let spans = std::mem::take(batch);
    let count = spans.len() as u64;
    if let Err(error) = exporter.export(spans).await {
        metrics::counter!("hookinbox_otlp_spans_dropped_total", "reason" => "export_failed")
            .increment(count);
        tracing::debug!(message = "OTLP export failed; spans dropped.", %error, spans = count);
    }
}
