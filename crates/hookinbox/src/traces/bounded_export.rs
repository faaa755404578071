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

impl BoundedExport {
    /// Spawns the export task on the current Tokio runtime.
    pub fn spawn<E: SpanExporter + 'static>(
        exporter: E,
        capacity: usize,
        batch_size: usize,
    ) -> BoundedExport {
        let (queue, receiver) = mpsc::channel(capacity);
        tokio::spawn(drain(exporter, receiver, batch_size));
        metrics::counter!("hookinbox_otlp_spans_dropped_total", "reason" => "queue_full")
            .absolute(0);
        metrics::counter!("hookinbox_otlp_spans_dropped_total", "reason" => "export_failed")
            .absolute(0);
        BoundedExport { queue }
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

    fn force_flush(&self) -> OTelSdkResult {
        let (done, finished) = oneshot::channel();
        self.queue
            .try_send(Message::Flush(done))
            .map_err(|_| OTelSdkError::InternalFailure("export queue full".to_owned()))?;
        // Called from a runtime thread at shutdown: do not block it.
        drop(finished);
        Ok(())
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
