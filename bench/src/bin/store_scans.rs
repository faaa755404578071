//! `store_scans`: what the metrics sampler and reconciliation cost on a big
//! inbox. It fills a store (SQLite, and PostgreSQL with `--postgres`) with
//! `--events` events, all PROCESSED with a DELIVERED delivery except the
//! last `--backlog`, which are ACCEPTED with a PENDING one, written straight
//! into the tables in one transaction (the accept path is not what is
//! measured here). Then it times each read `--rounds` times through the
//! `Store` trait — exactly the calls `serve` makes — and prints the median
//! and the slowest, in milliseconds.
//!
//! ```sh
//! cargo run --release -p hookinbox-bench --bin store_scans -- \
//!     --events 1000000 --backlog 5000 \
//!     --postgres postgres://postgres@127.0.0.1:5432/postgres
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use hookinbox::store::{
    DriftQuery, InboxStatus, PostgresOptions, PostgresStore, PostgresUrl, SqliteOptions,
    SqliteStore, Store, TargetRef,
};

#[derive(Debug, Parser)]
struct Args {
    /// Events in the inbox.
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    /// Of those, the newest still ACCEPTED with a PENDING delivery.
    #[arg(long, default_value_t = 5_000)]
    backlog: u64,
    /// Timed runs of each read.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Measure PostgreSQL too, in a schema of its own (dropped afterwards).
    #[arg(long)]
    postgres: Option<String>,
}

/// The event `n` of `events`: its inbox id (a UUIDv7 of its arrival, one
/// millisecond apart, ending at `now_ms`) and whether it is in the backlog.
fn inbox_id(n: u64, events: u64, now_ms: i64) -> String {
    let ms = (now_ms - (events - n) as i64) as u64;
    format!("{:08x}-{:04x}-7000-8000-{:012x}", ms >> 16, ms & 0xffff, n)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;

    let dir = tempfile::tempdir()?;
    let path = dir.path().join("inbox.db");
    drop(SqliteStore::open(SqliteOptions::new(&path))?);
    let started = Instant::now();
    fill_sqlite(&path, &args, now_ms)?;
    eprintln!(
        "sqlite: filled {} events in {:?}",
        args.events,
        started.elapsed()
    );
    let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(SqliteOptions::new(&path))?);
    measure("sqlite", &sqlite, &args, now_ms).await?;
    drop(sqlite);

    if let Some(url) = &args.postgres {
        // Within the 40 characters a schema name may have.
        let suffix = uuid::Uuid::now_v7().simple().to_string();
        let schema = format!("bench_scans_{}", &suffix[20..]);
        let mut options = PostgresOptions::new(PostgresUrl::parse(url)?);
        options.schema = Some(schema.clone());
        let store = PostgresStore::open(options).await?;
        let started = Instant::now();
        let measured = async {
            fill_postgres(url, &schema, &args, now_ms).await?;
            eprintln!(
                "postgres: filled {} events in {:?}",
                args.events,
                started.elapsed()
            );
            let store: Arc<dyn Store> = Arc::new(store);
            measure("postgres", &store, &args, now_ms).await
        }
        .await;
        drop_schema(url, &schema).await?;
        measured?;
    }
    Ok(())
}

fn fill_sqlite(path: &std::path::Path, args: &Args, now_ms: i64) -> anyhow::Result<()> {
    let mut conn = hookinbox::rusqlite::Connection::open(path)?;
    let tx = conn.transaction()?;
    {
        let mut inbox = tx.prepare(
            "INSERT INTO inbox (id, endpoint_id, provider, provider_event_id, event_type,
                                received_at_ms, payload_sha256, audit_headers,
                                matched_secret_version, status, targets)
             VALUES (?1, 'lab', 'lab', ?2, 'payment.succeeded', ?3, x'00', '[]', 'v1', ?4, '[\"sink\"]')",
        )?;
        let mut delivery = tx.prepare(
            "INSERT INTO delivery (inbox_id, endpoint_id, target, generation, status, attempts,
                                   next_attempt_at_ms, created_at_ms, delivered_at_ms)
             VALUES (?1, 'lab', 'sink', 0, ?2, ?3, ?4, ?4, ?5)",
        )?;
        for n in 0..args.events {
            let id = inbox_id(n, args.events, now_ms);
            let received = now_ms - (args.events - n) as i64;
            let open = n >= args.events - args.backlog;
            let (status, state) = if open {
                ("ACCEPTED", "PENDING")
            } else {
                ("PROCESSED", "DELIVERED")
            };
            inbox.execute(hookinbox::rusqlite::params![
                id,
                format!("e{n}"),
                received,
                status
            ])?;
            delivery.execute(hookinbox::rusqlite::params![
                id,
                state,
                i64::from(!open),
                received,
                (!open).then_some(received)
            ])?;
        }
    }
    tx.commit()?;
    conn.execute_batch("ANALYZE")?;
    Ok(())
}

async fn client(
    url: &str,
    schema: Option<&str>,
) -> anyhow::Result<hookinbox::tokio_postgres::Client> {
    let mut config: hookinbox::tokio_postgres::Config = url.parse()?;
    if let Some(schema) = schema {
        config.options(format!("-c search_path={schema}"));
    }
    let (client, connection) = config.connect(hookinbox::tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

async fn fill_postgres(url: &str, schema: &str, args: &Args, now_ms: i64) -> anyhow::Result<()> {
    let client = client(url, Some(schema)).await?;
    let first_open = args.events - args.backlog;
    // The ids as `inbox_id` makes them, in SQL.
    let sql = format!(
        "INSERT INTO inbox (id, endpoint_id, provider, provider_event_id, event_type,
                            received_at_ms, payload_sha256, audit_headers, matched_secret_version,
                            status, targets)
         SELECT lpad(to_hex(ms >> 16), 8, '0') || '-' || lpad(to_hex(ms & 65535), 4, '0')
                || '-7000-8000-' || lpad(to_hex(n), 12, '0'),
                'lab', 'lab', 'e' || n, 'payment.succeeded', ms, '\\x00', '[]', 'v1',
                CASE WHEN n >= {first_open} THEN 'ACCEPTED' ELSE 'PROCESSED' END, '[\"sink\"]'
         FROM (SELECT n, {now_ms}::int8 - ({events} - n) AS ms
               FROM generate_series(0::int8, {last}::int8) AS n) s;
         INSERT INTO delivery (inbox_id, endpoint_id, target, generation, status, attempts,
                               next_attempt_at_ms, created_at_ms, delivered_at_ms)
         SELECT id, 'lab', 'sink', 0,
                CASE WHEN status = 'ACCEPTED' THEN 'PENDING' ELSE 'DELIVERED' END,
                CASE WHEN status = 'ACCEPTED' THEN 0 ELSE 1 END,
                received_at_ms, received_at_ms,
                CASE WHEN status = 'ACCEPTED' THEN NULL ELSE received_at_ms END
         FROM inbox;",
        events = args.events,
        last = args.events - 1,
    );
    client
        .batch_execute(&sql)
        .await
        .context("filling PostgreSQL")?;
    // Outside the fill's transaction: VACUUM cannot run inside one.
    for table in ["inbox", "delivery"] {
        client
            .batch_execute(&format!("VACUUM ANALYZE {table}"))
            .await
            .context("VACUUM")?;
    }
    Ok(())
}

async fn drop_schema(url: &str, schema: &str) -> anyhow::Result<()> {
    let client = client(url, None).await?;
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await?;
    Ok(())
}

async fn measure(
    backend: &str,
    store: &Arc<dyn Store>,
    args: &Args,
    now_ms: i64,
) -> anyhow::Result<()> {
    let endpoints = vec!["lab".to_owned(), "quiet".to_owned()];
    let targets = vec![
        TargetRef {
            endpoint_id: "lab".into(),
            target: "sink".into(),
        },
        TargetRef {
            endpoint_id: "quiet".into(),
            target: "sink".into(),
        },
    ];
    println!(
        "{backend}: {} events, {} of them a backlog; median and slowest of {} runs",
        args.events, args.backlog, args.rounds
    );
    let counts = Arc::clone(store)
        .backlog_counts()
        .ok_or_else(|| anyhow::anyhow!("{backend} counts no backlog"))?;
    let reconciliation = Arc::clone(store)
        .reconciliation()
        .ok_or_else(|| anyhow::anyhow!("{backend} does not reconcile"))?;
    time(backend, "backlog (every sample)", args.rounds, || async {
        let backlog = counts.backlog(&endpoints, &targets).await?;
        anyhow::ensure!(backlog.targets[0].open == args.backlog, "{backlog:?}");
        Ok(())
    })
    .await?;
    for status in [
        InboxStatus::Accepted,
        InboxStatus::Failed,
        InboxStatus::Processed,
    ] {
        let label = format!("count_by_status {}", status.as_str());
        time(backend, &label, args.rounds, || async {
            counts.count_by_status(status).await?;
            Ok(())
        })
        .await?;
    }
    // The events arrived one millisecond apart: a minute holds 60,000.
    for (label, lookback) in [
        ("find_drift, 60,000 in lookback", Duration::from_secs(60)),
        (
            "find_drift, all in lookback",
            Duration::from_secs(100 * 365 * 86_400),
        ),
    ] {
        time(backend, label, args.rounds, || async {
            let drift = reconciliation
                .find_drift(DriftQuery {
                    expired_before_ms: now_ms - 60_000,
                    accepted_since_ms: now_ms - lookback.as_millis() as i64,
                    limit: 1000,
                })
                .await?;
            anyhow::ensure!(drift.is_empty(), "{drift:?}");
            Ok(())
        })
        .await?;
    }
    // A new value each time, as the clock gives one in service.
    let probed_at = std::sync::atomic::AtomicI64::new(now_ms);
    time(backend, "probe_write (readiness)", args.rounds, || async {
        let at = probed_at.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        store.probe_write(at).await?;
        Ok(())
    })
    .await
}

async fn time<F, Fut>(backend: &str, label: &str, rounds: usize, mut run: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let mut took = Vec::with_capacity(rounds);
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        run().await?;
        took.push(started.elapsed());
    }
    took.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "  {backend:8} {label:30} median {:9.3} ms  max {:9.3} ms",
        ms(took[took.len() / 2]),
        ms(took[took.len() - 1])
    );
    Ok(())
}
