//! The command line: commands and their options (clap).

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
    /// How log lines on stderr are written; `RUST_LOG` picks which are
    /// (default `info`).
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
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// Overrides `server.listen` (port 0 picks a free port; the bound
        /// address is printed on stdout).
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// Overrides `admin.listen`, so two processes on one host can share
        /// a file (port 0 picks a free port; the bound address is logged).
        /// Needs an `[admin]` table; off loopback, its token.
        #[arg(long, value_name = "ADDR")]
        admin_listen: Option<std::net::SocketAddr>,
        /// Run ingress only; deliveries are left to `hookinbox work`.
        #[arg(long)]
        no_workers: bool,
    },
    /// Deliver accepted events to their targets (no ingress).
    Work {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// Serve the admin listener here (`/metrics`, `/readyz`, the API),
        /// with the `[admin]` table's token; without it a worker serves none.
        /// Port 0 picks a free port (the bound address is logged).
        #[arg(long, value_name = "ADDR")]
        admin_listen: Option<std::net::SocketAddr>,
    },
    /// Inspect and replay events.
    Events {
        #[command(subcommand)]
        command: EventsCommand,
    },
    /// Check one captured request offline, exactly as `serve` would.
    Verify {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
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
    /// Sign a request exactly as a provider would and POST it to a receiver
    /// (hookinbox or any other); prints the answer's status and body, and
    /// exits 1 on a status other than 2xx.
    Send {
        /// The provider to sign as (`hookinbox providers` lists them).
        #[arg(long)]
        provider: Option<String>,
        /// The environment variable holding the endpoint's secret.
        #[arg(long, value_name = "NAME", conflicts_with = "secret_file")]
        secret_env: Option<String>,
        /// A file holding the endpoint's secret (its final line break is ignored).
        #[arg(long, value_name = "FILE")]
        secret_file: Option<PathBuf>,
        /// The body to send, byte for byte.
        #[arg(long, value_name = "FILE", conflicts_with = "sample")]
        body_file: Option<PathBuf>,
        /// A bundled sample event of the provider (`--sample list` lists them).
        #[arg(long, value_name = "NAME")]
        sample: Option<String>,
        /// An extra header, `Name: value`; repeat for each. It replaces a
        /// header of the same name the provider would send.
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// The event or delivery id, for providers that send one in a
        /// header (default: a new random one).
        #[arg(long)]
        event_id: Option<String>,
        /// The signing time, unix seconds (default: now).
        #[arg(long)]
        now: Option<i64>,
        /// Print the answer as one JSON object.
        #[arg(long)]
        json: bool,
        /// The receiver's URL, e.g. `http://127.0.0.1:8080/hooks/stripe`.
        url: Option<String>,
    },
    /// Targets' transforms: `test` prints what a target would be sent.
    Transform {
        #[command(subcommand)]
        command: TransformCommand,
    },
    /// Print a complete example configuration, or check one.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Bring the database to this build's schema and exit (`serve` and
    /// `work` do it too; safe while other processes run).
    Migrate {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
    },
    /// Keys: check the encryption key ring against the database (`check`);
    /// reseal records under the active encryption key (`rewrap`);
    /// the endpoints' secret versions in a running `serve` (`status`,
    /// `reload`, through its admin listener).
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Remove what `[retention]` says is due now, as `serve` does every
    /// `purge_interval`; safe while the service runs.
    Purge {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// Only count what is due, rule by rule, on stdout.
        #[arg(long)]
        dry_run: bool,
    },
    /// One reconciliation pass, as `serve` runs every `reconcile.interval`:
    /// leases past expiry, statuses not updated, missing delivery rows, and
    /// events a provider's API lists that never arrived. Reports only,
    /// unless `--fix`; exits 1 when something is left to do.
    Reconcile {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// Repair what is safe: leases back to PENDING, statuses finished,
        /// missing deliveries added, missing events stored (marked as fetched).
        #[arg(long)]
        fix: bool,
        /// Print the report as JSON instead of one line per kind.
        #[arg(long)]
        json: bool,
    },
    /// Every provider hookinbox verifies: its scheme, what it signs, where
    /// the event id comes from and whether it is signed, the tolerance,
    /// redelivery window and handshake (docs/providers.md is this, as
    /// `--markdown`).
    Providers {
        /// Print JSON instead of text.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// Print the Markdown of docs/providers.md.
        #[arg(long)]
        markdown: bool,
    },
    /// Forward one endpoint's accepted events from a running instance's
    /// admin API to a local URL, one at a time, resuming after the last
    /// event the local app acknowledged (2xx) across disconnects and
    /// restarts (docs/development.md).
    Listen {
        /// The admin listener's URL, `http://127.0.0.1:9090` or `https://…`.
        #[arg(long, value_name = "URL")]
        admin: String,
        /// The environment variable holding the admin token.
        #[arg(long, value_name = "VAR")]
        token_env: Option<String>,
        /// The endpoint id whose events to forward.
        #[arg(long)]
        endpoint: String,
        /// The local URL each event is POSTed to.
        #[arg(long, value_name = "URL")]
        forward: String,
        /// The environment variable holding the local Standard Webhooks
        /// secret (`whsec_…`) forwarded events are signed with.
        #[arg(long, value_name = "VAR")]
        secret_env: Option<String>,
        /// Pass the provider's own headers (its signature) instead of
        /// re-signing; its signed timestamps age.
        #[arg(long)]
        original_headers: bool,
        /// With no saved cursor, start at events received at or after this
        /// time (unix seconds or RFC 3339) instead of now.
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// The file holding the cursor (default:
        /// `$XDG_STATE_HOME/hookinbox/listen-<endpoint>.json`).
        #[arg(long, value_name = "FILE")]
        state: Option<PathBuf>,
        /// One JSON object per attempt instead of a line of text.
        #[arg(long)]
        json: bool,
    },
    /// Pause, resume and list delivery targets (their pause and circuit
    /// breaker state is in the database, so every process honours it).
    Targets {
        #[command(subcommand)]
        command: TargetsCommand,
    },
    /// Inbox counts by status and endpoint.
    Stats {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Endpoints: the secrets their providers handed over (`handshake`).
    Endpoints {
        #[command(subcommand)]
        command: EndpointsCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Reseal every record not under the active key (older keys, plaintext)
    /// under it, in batches; safe while the service runs. Then the older
    /// keys can be removed from the configuration.
    Rewrap {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// Records resealed per transaction.
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
        batch: u32,
    },
    /// Check the encryption key ring against the database, offline and
    /// read only, as `serve` does before it starts: each key id's check
    /// value must open under its configured key, and every key id that
    /// sealed rows must be in the ring. Exits 1 naming the key id when not.
    Check {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// Print JSON instead of one line per key.
        #[arg(long)]
        json: bool,
    },
    /// Each endpoint's secret versions in use: their windows, whether each
    /// is inside it now, and how many requests each verified in the last
    /// 24 hours (counted by the serving process since it started).
    Status {
        /// The configuration file of the running `serve` (for `[admin]`).
        #[arg(long)]
        config: PathBuf,
        /// The admin listener's address, when `admin.listen` does not say
        /// it (port 0).
        #[arg(long)]
        admin: Option<std::net::SocketAddr>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Make the running `serve` re-read every endpoint's secret versions
    /// from the configuration file and their sources, as SIGHUP does.
    Reload {
        /// The configuration file of the running `serve` (for `[admin]`).
        #[arg(long)]
        config: PathBuf,
        /// The admin listener's address, when `admin.listen` does not say
        /// it (port 0).
        #[arg(long)]
        admin: Option<std::net::SocketAddr>,
        /// Print JSON instead of a summary.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum TargetsCommand {
    /// Stop delivering to a target: its deliveries wait, no attempt is
    /// made and `max_age` does not count while it is paused.
    Pause {
        /// The configuration file (TOML).
        #[arg(long)]
        config: PathBuf,
        /// `ENDPOINT/TARGET`.
        target: String,
    },
    /// Deliver to a paused target again; its waiting deliveries drain in
    /// order.
    Resume {
        /// The configuration file (TOML).
        #[arg(long)]
        config: PathBuf,
        /// `ENDPOINT/TARGET`.
        target: String,
    },
    /// Every configured target and its state: closed, open, half_open or paused.
    List {
        /// The configuration file (TOML).
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
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// Which events (the admin API's filters).
        #[command(flatten)]
        selection: crate::event_selection::EventSelection,
        /// Continue after this page: the `next page` cursor a listing printed.
        #[arg(long)]
        cursor: Option<String>,
        /// At most this many events.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Print JSON (an array of events) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One event: metadata, deliveries, attempts, last error.
    Show {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// The inbox id.
        id: String,
        /// Include the raw payload (base64 in JSON, raw bytes after the
        /// summary otherwise).
        #[arg(long)]
        payload: bool,
        /// Print JSON instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Deliver events again: new deliveries with the same idempotency key,
    /// to the targets whose event_types and filter take each event under
    /// the current configuration (routing is evaluated again).
    Replay {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// The inbox id to replay; or, instead, filters that select events.
        id: Option<String>,
        /// Which events to replay (the admin API's filters), when no id is given.
        #[command(flatten)]
        selection: crate::event_selection::EventSelection,
        /// Count the events the filters select and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Replay to this target only (its event_types and filter still
        /// apply), e.g. one added after the events were accepted. Without
        /// it, each event goes to every target of its endpoint whose
        /// event_types and filter take it under the configuration as it is
        /// now, not to the targets of its last delivery.
        #[arg(long, value_name = "NAME")]
        target: Option<String>,
        /// Print JSON (the replayed inbox ids) instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print a complete, commented configuration: every field, its default
    /// and what it does.
    Example,
    /// Check a configuration as `serve` would (secrets, keys and certificate
    /// files included), then print the settings it resolves to; secrets are
    /// shown only as their sources.
    Check {
        /// The configuration file to check.
        #[arg(long)]
        config: PathBuf,
        /// Print the settings as JSON instead of TOML.
        #[arg(long)]
        json: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// `--help` explains every option of every command (`--config` had no
    /// description anywhere).
    #[test]
    fn every_option_and_command_has_a_description() {
        fn undocumented(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            if command.get_about().is_none() {
                missing.push(format!("`{path}` has no about"));
            }
            for arg in command.get_arguments() {
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("`{path}` option `{}`", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                undocumented(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut command = Cli::command();
        // Adds --help and --version, and the global options to every subcommand.
        command.build();
        let mut missing = Vec::new();
        undocumented(&command, "hookinbox", &mut missing);
        assert!(missing.is_empty(), "{missing:#?}");
        // The walk reaches the leaves: `events list` and its options.
        let list = command
            .find_subcommand("events")
            .and_then(|events| events.find_subcommand("list"))
            .expect("events list");
        assert!(list.get_arguments().any(|arg| arg.get_id() == "config"));
    }
}

/// `hookinbox transform …`.
#[derive(Debug, Subcommand)]
pub enum TransformCommand {
    /// Print the request a target would be sent for one event, through its
    /// `transform` (and `body`) settings; nothing is sent. Exits 1 when the
    /// transform fails, with the exception's message on stderr.
    #[command(group(clap::ArgGroup::new("source").required(true).args(["event", "body_file"])))]
    Test {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// The target, as `ENDPOINT/TARGET`.
        #[arg(long)]
        target: String,
        /// A stored event's inbox id (its body is read from the database).
        #[arg(long)]
        event: Option<String>,
        /// A body to use instead of a stored event.
        #[arg(long)]
        body_file: Option<PathBuf>,
        /// The `Content-Type` of `--body-file`.
        #[arg(long, default_value = "application/json", requires = "body_file")]
        content_type: String,
        /// The event type the script sees with `--body-file`.
        #[arg(long, requires = "body_file")]
        event_type: Option<String>,
    },
}

/// `hookinbox endpoints …`.
#[derive(Debug, Subcommand)]
pub enum EndpointsCommand {
    /// The secrets an endpoint's provider handed over in its handshake
    /// (Asana's `X-Hook-Secret`, Notion's verification token), read from
    /// the database: version, time and fingerprint; with `--reveal`, the
    /// secret itself (Notion's token, to paste back into Notion). Printed
    /// on stdout only, never logged.
    Handshake {
        /// The configuration file (TOML); relative paths in it are taken from
        /// its folder.
        #[arg(long)]
        config: PathBuf,
        /// The endpoint's id.
        endpoint: String,
        /// Print each secret itself.
        #[arg(long)]
        reveal: bool,
        /// Print JSON instead of one line per secret.
        #[arg(long)]
        json: bool,
    },
}
