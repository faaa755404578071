//! `amqp_queue`: the queue `bench/delivery.sh` measures a `rabbitmq`
//! target into (`TARGET=rabbitmq`): `declare` makes a durable queue bound
//! to an exchange (a durable topic exchange, declared too), `count` prints
//! how many messages it holds, `delete` removes both. The broker's own
//! tools need its management plugin; this needs only AMQP.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use lapin::options::{
    ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties, ExchangeKind};

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
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Args::parse();
    let connection = Connection::connect(&args.url, ConnectionProperties::default())
        .await
        .context("connect to the broker")?;
    let channel = connection.create_channel().await?;
    match args.action {
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
