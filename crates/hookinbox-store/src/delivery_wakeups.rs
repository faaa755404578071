//! Wake-ups for idle delivery workers. A worker that found nothing due
//! sleeps until its next poll; a wake-up cuts the sleep short when a
//! backend knows new deliveries were committed (PostgreSQL: a NOTIFY from
//! another process). It is only a hint: a missed or spurious wake-up costs
//! at most one poll interval or one empty lease, so workers keep polling.

use tokio::sync::broadcast;

/// A subscription to "deliveries may be due" hints.
pub struct DeliveryWakeups {
    receiver: Option<broadcast::Receiver<()>>,
}

impl DeliveryWakeups {
    /// A subscription that never fires (backends without a signal).
    pub fn never() -> DeliveryWakeups {
        DeliveryWakeups { receiver: None }
    }

    pub(crate) fn from_receiver(receiver: broadcast::Receiver<()>) -> DeliveryWakeups {
        DeliveryWakeups {
            receiver: Some(receiver),
        }
    }

    /// Waits for the next wake-up. Several hints that arrived while nobody
    /// waited count as one; a subscription whose source is gone never
    /// fires again (the worker's poll timer still runs).
    pub async fn next(&mut self) {
        let Some(receiver) = self.receiver.as_mut() else {
            return std::future::pending().await;
        };
        match receiver.recv().await {
            Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                // Hints that piled up say nothing more than one does.
                while receiver.try_recv().is_ok() {}
            }
            Err(broadcast::error::RecvError::Closed) => {
                self.receiver = None;
                std::future::pending::<()>().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn hints_that_piled_up_wake_once() {
        let (sender, receiver) = broadcast::channel(4);
        let mut wakeups = DeliveryWakeups::from_receiver(receiver);
        for _ in 0..10 {
            let _ = sender.send(());
        }
        wakeups.next().await;
        // Polled once, with nothing sent since: not ready.
        let again = tokio::time::timeout(Duration::ZERO, wakeups.next()).await;
        assert!(again.is_err(), "one wake-up for the whole pile");
        let _ = sender.send(());
        tokio::time::timeout(Duration::from_secs(5), wakeups.next())
            .await
            .expect("a new hint wakes again");
    }
}
