//! `baseline`: hookinbox's ingress with storage removed — a BENCHMARK
//! BASELINE ONLY.
//!
//! # ⚠ Never use this binary to receive webhooks ⚠
//!
//! It answers `200 {"accepted":true,…}` for every verified event **without
//! storing it anywhere**. A provider that receives that answer stops retrying,
//! and the event is lost for good. It breaks the one rule hookinbox exists for
//! (a 2xx means "durably accepted"). It lives in `bench/`, not in the
//! `hookinbox` crate, so that it can never be deployed by mistake with the
//! service.
//!
//! # Why it exists
//!
//! The benchmark machine is shared and noisy, so absolute latencies move from
//! run to run. `bench/run.sh` runs this binary and the real `hookinbox serve`
//! in the same run, interleaved, with the same load. The ratio between the two
//! isolates what durability costs (the SQLite group commit, its fsync, and
//! the hand-over to the writer thread) from everything else (HTTP, body read,
//! signature verification, the load generator sharing the cores).
//!
//! Everything except the store is the real service: the same configuration
//! file and loader, the same endpoints and verifiers, the same router and
//! ingress pipeline, the same server loop, metrics recorder and tokio
//! runtime: it runs the very [`hookinbox::Service`] `hookinbox serve` runs,
//! without workers, and only [`DiscardStore`] (given to `Service::store`)
//! replaces the SQLite store. It prints the same stdout line
//! (`announce_on_stdout`), so the script starts both the same way.
//!
//! ```sh
//! baseline --config bench.toml --listen 127.0.0.1:0
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use async_trait::async_trait;
use clap::Parser;
use hookinbox::store::{
    AcceptOutcome, LeaseParams, LeasedDelivery, NewEvent, ReplaySelector, Settlement, Stats, Store,
    StoreError, StoredEvent,
};
use hookinbox::{config, Service};
use tracing_subscriber::EnvFilter;

/// Flags: the same two as `hookinbox serve`.
#[derive(Debug, Parser)]
#[command(
    name = "baseline",
    about = "BENCHMARK BASELINE ONLY: hookinbox's ingress acknowledging WITHOUT storing. \
             Never use it to receive webhooks: every acknowledged event is lost."
)]
struct Args {
    /// A hookinbox configuration file (its `[storage]` section is ignored).
    #[arg(long)]
    config: PathBuf,
    /// Overrides `server.listen` (port 0 picks a free port).
    #[arg(long)]
    listen: Option<SocketAddr>,
}

/// A [`Store`] that keeps nothing: `accept` answers `Inserted` with a fresh
/// id (the same UUIDv7 form the SQLite store gives, so the response has the
/// same size), and every other method finds nothing.
///
/// It acknowledges WITHOUT durability. It exists only to measure the cost of
/// the real store against it.
struct DiscardStore;

#[async_trait]
impl Store for DiscardStore {
    async fn accept(&self, event: NewEvent) -> Result<AcceptOutcome, StoreError> {
        drop(event);
        Ok(AcceptOutcome::Inserted {
            id: uuid::Uuid::now_v7().to_string(),
        })
    }

    async fn lease(&self, _params: LeaseParams) -> Result<Vec<LeasedDelivery>, StoreError> {
        Ok(Vec::new())
    }

    async fn heartbeat(&self, _lease: &LeasedDelivery, _until_ms: i64) -> Result<bool, StoreError> {
        Ok(false)
    }

    async fn settle(
        &self,
        _lease: &LeasedDelivery,
        _settlement: Settlement,
        _now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(false)
    }

    async fn reclaim_expired(&self, _now_ms: i64) -> Result<u64, StoreError> {
        Ok(0)
    }

    async fn replay(
        &self,
        _selector: ReplaySelector,
        _now_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }

    async fn load_event(&self, _inbox_id: &str) -> Result<Option<StoredEvent>, StoreError> {
        Ok(None)
    }

    async fn stats(&self) -> Result<Stats, StoreError> {
        Ok(Stats::default())
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // The same logging set-up as `hookinbox serve`, so both pay the same for it.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    tracing::warn!(
        message = "BENCHMARK BASELINE: events are acknowledged WITHOUT being stored. \
                   Never point a webhook provider at this process."
    );
    // The same runtime as `hookinbox serve`.
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?
        .block_on(serve(args))
}

/// `hookinbox serve --no-workers` with the store swapped for [`DiscardStore`].
async fn serve(args: Args) -> anyhow::Result<()> {
    let mut settings = config::load(&args.config)?;
    if let Some(listen) = args.listen {
        settings.server.listen = listen;
    }
    Service::from_settings(settings)
        .store(Arc::new(DiscardStore))
        .workers(false)
        .announce_on_stdout()
        .run_until(hookinbox::shutdown_signal())
        .await?;
    Ok(())
}
