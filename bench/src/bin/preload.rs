//! `preload`: fills an SQLite database with old events for the purge
//! benchmark (`bench/purge.sh`), fast: through the store directly (no HTTP,
//! no signatures), many accepts in flight at once so the group commit takes
//! hundreds per transaction.
//!
//! Each event is what `serve` would have stored for the bench config's
//! `bench` endpoint (provider `lab`, no targets, so PROCESSED at once), with
//! `received_at_ms` `--age-days` back: past both retention rules the
//! benchmark sets, so the purge deletes every one of them whole. Bodies are
//! plain (the bench config allows plaintext, as every measurement so far).
//!
//! BENCHMARK TOOL ONLY: it writes rows no provider sent.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use clap::Parser;
use hookinbox::store::{
    AcceptOutcome, Fingerprint, NewEvent, SqliteOptions, SqliteStore, Store, UnsignedMetadata,
};

#[derive(Parser)]
#[command(about = "Preload old events into an SQLite database for bench/purge.sh")]
struct Args {
    /// The database file (created, with its payload log beside it).
    #[arg(long)]
    db: std::path::PathBuf,
    /// How many events.
    #[arg(long, default_value_t = 1_000_000)]
    events: usize,
    /// Body size in bytes.
    #[arg(long, default_value_t = 256)]
    body_bytes: usize,
    /// How old the events are.
    #[arg(long, default_value_t = 3)]
    age_days: i64,
    /// Accepts in flight at once.
    #[arg(long, default_value_t = 2048)]
    in_flight: usize,
}

fn event(n: usize, body_bytes: usize, received_at_ms: i64) -> NewEvent {
    let head = format!(r#"{{"id":"old-{n}","type":"bench.old","pad":""#);
    let pad = body_bytes.saturating_sub(head.len() + 2);
    let body = format!("{head}{}\"}}", "x".repeat(pad));
    NewEvent {
        endpoint_id: "bench".to_owned(),
        provider: "lab".to_owned(),
        provider_event_id: format!("old-{n}"),
        event_type: Some("bench.old".to_owned()),
        object_id: None,
        object_version: None,
        provider_created_at: None,
        received_at_ms,
        content_type: Some("application/json".to_owned()),
        fingerprint: Fingerprint::of(body.as_bytes()),
        payload: Bytes::from(body),
        audit_headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        matched_secret_version: "bench-1".to_owned(),
        targets: Vec::new(),
        not_routed: Vec::new(),
        delays_ms: Default::default(),
        unsigned_metadata: UnsignedMetadata::default(),
        fingerprint_window_ms: None,
        trace_parent: None,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let args = Args::parse();
    if args.db.exists() {
        bail!(
            "{} exists: preload writes a new database",
            args.db.display()
        );
    }
    let now_ms = i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis())?;
    let received_at_ms = now_ms - args.age_days * 86_400_000;
    let mut options = SqliteOptions::new(&args.db);
    options.queue_capacity = args.in_flight * 2;
    let store = Arc::new(SqliteStore::open(options).context("open the database")?);
    let started = Instant::now();
    let permits = Arc::new(tokio::sync::Semaphore::new(args.in_flight));
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..args.events {
        let permit = Arc::clone(&permits).acquire_owned().await?;
        let store = Arc::clone(&store);
        let event = event(n, args.body_bytes, received_at_ms);
        tasks.spawn(async move {
            let outcome = store.accept(event).await;
            drop(permit);
            outcome
        });
        while let Some(done) = tasks.try_join_next() {
            if !matches!(done??, AcceptOutcome::Inserted { .. }) {
                bail!("event {n}: not inserted (is the database new?)");
            }
        }
    }
    while let Some(done) = tasks.join_next().await {
        if !matches!(done??, AcceptOutcome::Inserted { .. }) {
            bail!("an event was not inserted (is the database new?)");
        }
    }
    drop(store);
    eprintln!(
        "preloaded {} events of {} B, {} days old, in {:.1} s",
        args.events,
        args.body_bytes,
        args.age_days,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
