//! LISTEN for the delivery channel, so idle workers wake when another
//! process committed new deliveries (accepted events, replays, reclaimed
//! leases each NOTIFY once per transaction).
//!
//! One dedicated connection per process, outside the pool (a pooled
//! connection would lose its LISTEN when recycled), started the first time
//! a worker subscribes: ingress-only processes never open it. When the
//! connection drops, it reconnects with a growing pause and then sends one
//! wake-up, since notifications sent while it was away are lost. Polling
//! stays the fallback for everything this misses.

use std::time::Duration;

use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Wakes the listeners of a channel (`$1`) when the transaction commits;
/// PostgreSQL folds identical notifications of one transaction into one.
pub(crate) const NOTIFY: &str = "SELECT pg_notify($1, '')";

/// Longest pause between two reconnection attempts.
const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// The channel's name: one per schema, so two hookinbox deployments in two
/// schemas of one database do not wake each other.
pub(crate) fn channel_name(schema: Option<&str>) -> String {
    match schema {
        Some(schema) => format!("hookinbox_delivery_{schema}"),
        None => "hookinbox_delivery".to_owned(),
    }
}

/// The listening task; it stops when dropped.
pub(crate) struct Listener {
    task: JoinHandle<()>,
}

impl Listener {
    /// Starts listening on `channel`; every notification (and every
    /// reconnection) is sent to `wakeups`.
    pub(crate) fn start(
        config: tokio_postgres::Config,
        tls: MakeRustlsConnect,
        channel: String,
        wakeups: broadcast::Sender<()>,
    ) -> Listener {
        Listener {
            task: tokio::spawn(listen(config, tls, channel, wakeups)),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn listen(
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    channel: String,
    wakeups: broadcast::Sender<()>,
) {
    let mut pause = Duration::from_millis(100);
    loop {
        match listen_once(&config, tls.clone(), &channel, &wakeups).await {
            Ok(()) => pause = Duration::from_millis(100),
            Err(error) => {
                tracing::warn!(
                    message = "LISTEN connection to PostgreSQL lost; workers poll until it is back.",
                    %error
                );
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// One connection's life: LISTEN, then forward notifications until it
/// ends.
async fn listen_once(
    config: &tokio_postgres::Config,
    tls: MakeRustlsConnect,
    channel: &str,
    wakeups: &broadcast::Sender<()>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(tls).await?;
    // The connection is driven here, not by a task of its own, so each
    // notification is seen as it arrives.
    let forward = async {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(_))) => {
                    let _ = wakeups.send(());
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error),
                None => return Ok(()),
            }
        }
    };
    let subscribe = async {
        let quoted = channel.replace('"', "\"\"");
        client
            .batch_execute(&format!("LISTEN \"{quoted}\""))
            .await?;
        // Whatever was committed while nobody listened is due now.
        let _ = wakeups.send(());
        std::future::pending::<Result<(), tokio_postgres::Error>>().await
    };
    tokio::select! {
        ended = forward => ended,
        failed = subscribe => failed,
    }
}
