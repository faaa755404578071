//! Command-line interface.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "hookinbox", version, about = "Durable webhook receiver")]
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
