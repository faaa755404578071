//! Command-line interface.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// `--version`: the release and the commit it was built from (`build.rs`;
/// "unknown" when built outside a git checkout).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("HOOKINBOX_COMMIT"),
    ")"
);

#[derive(Debug, Parser)]
#[command(name = "hookinbox", version = VERSION, about = "Durable webhook receiver")]
pub struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Receive webhooks.
    Serve {
        #[arg(long)]
        config: PathBuf,
        /// Overrides `server.listen` (port 0 picks a free port; the bound
        /// address is printed on stdout).
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// Run ingress only; deliveries are left to `hookinbox work`.
        #[arg(long)]
        no_workers: bool,
    },
    /// Deliver accepted events to their targets (no ingress).
    Work {
        #[arg(long)]
        config: PathBuf,
    },
    /// Inspect and replay events.
    Events {
        #[command(subcommand)]
        command: EventsCommand,
    },
    /// Check one captured request offline, exactly as `serve` would.
    Verify {
        #[arg(long)]
        config: PathBuf,
        /// The endpoint id whose scheme and secrets to use.
        #[arg(long)]
        endpoint: String,
        /// The time to verify at, unix seconds (default: now).
        #[arg(long)]
        now: Option<i64>,
        /// A request header, `Name: value`; repeat for each header.
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// The raw body, byte for byte as received.
        #[arg(long)]
        body_file: PathBuf,
        /// The raw query string of the request URL, if the scheme signs it.
        #[arg(long)]
        query: Option<String>,
    },
    /// Inbox counts by status and endpoint.
    Stats {
        #[arg(long)]
        config: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// List events, newest first.
    List {
        #[arg(long)]
        config: PathBuf,
        /// accepted, processed or failed.
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        endpoint: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// One event: metadata, deliveries, attempts, last error.
    Show {
        #[arg(long)]
        config: PathBuf,
        /// The inbox id.
        id: String,
        /// Include the raw payload (base64 in JSON, raw bytes otherwise).
        #[arg(long)]
        payload: bool,
        #[arg(long)]
        json: bool,
    },
    /// Deliver events again: new deliveries with the same idempotency key.
    Replay {
        #[arg(long)]
        config: PathBuf,
        /// The inbox id to replay.
        #[arg(required_unless_present = "status", conflicts_with = "status")]
        id: Option<String>,
        /// Replay every event with this status (only `failed`).
        #[arg(long)]
        status: Option<String>,
        /// With --status: only events received at or after this time (unix seconds).
        #[arg(long)]
        since: Option<i64>,
        #[arg(long)]
        json: bool,
    },
}
