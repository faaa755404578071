//! `amqp_queue`: the queue `bench/delivery.sh` measures a `rabbitmq`
//! target into (`TARGET=rabbitmq`): `declare` makes a durable queue bound
//! to an exchange (a durable topic exchange, declared too), `count` prints
//! how many messages it holds, `delete` removes both. The broker's own
//! tools need its management plugin; this needs only AMQP.
//!
//! `publish` is the broker's own ceiling, the reference a `rabbitmq`
//! target's drain is read against (as pgbench is for PostgreSQL): N
//! persistent, mandatory messages of the benchmark's size, with metadata
//! headers like a target's, on one confirm-mode channel with a window of
//! unconfirmed messages as deep as the target's concurrency. It prints the
//! confirmed messages per second.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, ExchangeDeleteOptions,
    QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Confirmation, Connection, ConnectionProperties, ExchangeKind};
use tokio::sync::Semaphore;

#[derive(Parser)]
#[command(about = "Declare, count or delete the rabbitmq benchmark's queue")]
struct Args {
    /// The broker.
    #[arg(long, default_value = "amqp://guest:guest@127.0.0.1:5672/%2f")]
    url: String,
    /// The exchange (a topic exchange).
    #[arg(long)]
    exchange: String,
    /// The queue, bound to every routing key (`#`).
    #[arg(long)]
    queue: String,
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    Declare,
    Count,
    Delete,
    /// Publish N confirmed messages into the exchange; print messages/s.
    Publish {
        #[arg(long, default_value_t = 30_000)]
        count: usize,
        /// Body bytes of each message.
        #[arg(long, default_value_t = 1024)]
        size: usize,
        /// Most messages published and not yet confirmed.
        #[arg(long, default_value_t = 64)]
        window: usize,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Args::parse();
    let connection = Connection::connect(&args.url, ConnectionProperties::default())
        .await
        .context("connect to the broker")?;
    let channel = connection.create_channel().await?;
    match args.action {
        Action::Publish {
            count,
            size,
            window,
        } => {
            channel
                .confirm_select(ConfirmSelectOptions::default())
                .await?;
            let per_s = publish(&channel, &args.exchange, count, size, window).await?;
            println!("{per_s:.1}");
        }
        Action::Declare => {
            let durable = ExchangeDeclareOptions {
                durable: true,
                ..ExchangeDeclareOptions::default()
            };
            channel
                .exchange_declare(
                    args.exchange.as_str().into(),
                    ExchangeKind::Topic,
                    durable,
                    FieldTable::default(),
                )
                .await?;
            channel
                .queue_declare(
                    args.queue.as_str().into(),
                    QueueDeclareOptions::durable(),
                    FieldTable::default(),
                )
                .await?;
            channel
                .queue_bind(
                    args.queue.as_str().into(),
                    args.exchange.as_str().into(),
                    "#".into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await?;
        }
        Action::Count => {
            let queue = channel
                .queue_declare(
                    args.queue.as_str().into(),
                    QueueDeclareOptions {
                        passive: true,
                        ..QueueDeclareOptions::default()
                    },
                    FieldTable::default(),
                )
                .await?;
            println!("{}", queue.message_count());
        }
        Action::Delete => {
            channel
                .queue_delete(args.queue.as_str().into(), QueueDeleteOptions::default())
                .await?;
            channel
                .exchange_delete(
                    args.exchange.as_str().into(),
                    ExchangeDeleteOptions::default(),
                )
                .await?;
        }
    }
    Ok(())
}

/// Publishes `count` messages as a `rabbitmq` target does (persistent,
/// mandatory, a message id and string headers) with at most `window`
/// unconfirmed; confirmed messages per second.
async fn publish(
    channel: &lapin::Channel,
    exchange: &str,
    count: usize,
    size: usize,
    window: usize,
) -> Result<f64> {
    let permits = Arc::new(Semaphore::new(window.max(1)));
    let body = Arc::new(vec![b'x'; size]);
    let mut confirms = tokio::task::JoinSet::new();
    let started = Instant::now();
    for n in 0..count {
        let permit = Arc::clone(&permits).acquire_owned().await?;
        let mut headers = FieldTable::default();
        for (name, value) in [
            ("Idempotency-Key", format!("bench-{n:012}")),
            ("X-Hookinbox-Event-Id", format!("bench-{n:012}")),
            ("X-Hookinbox-Event-Type", "bench".to_owned()),
            ("X-Hookinbox-Provider", "lab".to_owned()),
            ("X-Hookinbox-Endpoint", "lab".to_owned()),
        ] {
            headers.insert(
                ShortString::from(name),
                AMQPValue::LongString(LongString::from(value)),
            );
        }
        let properties = BasicProperties::default()
            .with_delivery_mode(2)
            .with_message_id(ShortString::from(format!("bench-{n:012}")))
            .with_headers(headers);
        let channel = channel.clone();
        let exchange = exchange.to_owned();
        let body = Arc::clone(&body);
        confirms.spawn(async move {
            let confirmation = channel
                .basic_publish(
                    exchange.as_str().into(),
                    "bench.lab.bench".into(),
                    BasicPublishOptions {
                        mandatory: true,
                        immediate: false,
                    },
                    &body,
                    properties,
                )
                .await?
                .await?;
            drop(permit);
            Ok::<_, lapin::Error>(matches!(confirmation, Confirmation::Ack(None)))
        });
        while let Some(done) = confirms.try_join_next() {
            if !done?? {
                bail!("a message was returned or refused");
            }
        }
    }
    while let Some(done) = confirms.join_next().await {
        if !done?? {
            bail!("a message was returned or refused");
        }
    }
    Ok(count as f64 / started.elapsed().as_secs_f64())
}
