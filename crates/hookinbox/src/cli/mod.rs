//! The `hookinbox` command line, as one function: [`run`].
//!
//! The commands (`commands/`) are internal and report errors as `anyhow`
//! chains, which suit a one-line `error: …` on stderr; the library's own
//! API ([`Service`](crate::Service)) returns [`Error`](crate::Error). A
//! program that embeds hookinbox can still ship the whole command line,
//! with its handlers registered, by calling [`run`] from its `main`.

mod args;

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use crate::commands;
use crate::commands::output::{error_line, is_stdout_closed, note_line, Stdout};
use crate::telemetry::log_writer::{self, LogGuard};
use crate::HandlerRegistry;
pub(crate) use args::{
    Cli, Command, ConfigCommand, EndpointsCommand, EventsCommand, KeysCommand, LogFormat,
    TargetsCommand, TransformCommand,
};

/// The `hookinbox` program: parses the command line, logs to stderr
/// (`--log-format`, `RUST_LOG`), runs the command, and returns its exit
/// status: 0 success (or stdout closed by its reader), 1 a negative answer
/// (`verify` refused, `events show` found nothing), 2 an error, printed as
/// one `error: …` line. `serve` and `work` deliver `kind = "handler"`
/// targets with `handlers`; the stock binary has none.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     hookinbox::cli::run(hookinbox::HandlerRegistry::new())
/// }
/// ```
pub fn run(handlers: HandlerRegistry) -> ExitCode {
    let cli = Cli::parse();
    let log = init_logging(cli.log_format);
    let result = run_command(cli.command, handlers);
    // Every queued log line is out before the error line, and before exit.
    drop(log);
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) if is_stdout_closed(&error) => ExitCode::SUCCESS,
        Err(error) => {
            note_line(format_args!("error: {}", error_line(&error)));
            ExitCode::from(2)
        }
    }
}

/// Runs one command; `Ok(false)` is a negative answer.
fn run_command(command: Command, handlers: HandlerRegistry) -> anyhow::Result<bool> {
    match command {
        Command::Serve {
            config,
            listen,
            admin_listen,
            no_workers,
        } => runtime()?
            .block_on(commands::serve::run(
                &config,
                commands::serve::Addresses {
                    listen,
                    admin_listen,
                },
                !no_workers,
                handlers,
            ))
            .map(|()| true),
        Command::Work {
            config,
            admin_listen,
        } => runtime()?
            .block_on(commands::work::run(&config, admin_listen, handlers))
            .map(|()| true),
        Command::Events { command } => {
            runtime()?.block_on(commands::events::run(command, &mut Stdout::lock()))
        }
        Command::Verify {
            config,
            endpoint,
            now,
            headers,
            body_file,
            query,
        } => commands::verify::run(
            &config,
            &endpoint,
            now,
            &headers,
            &body_file,
            query.as_deref(),
            &mut Stdout::lock(),
        ),
        Command::Send {
            provider,
            secret_env,
            secret_file,
            body_file,
            sample,
            headers,
            event_id,
            now,
            json,
            url,
        } => {
            let args = commands::send::SendArgs {
                provider,
                secret_env,
                secret_file,
                body_file,
                sample,
                headers,
                event_id,
                now,
                json,
                url,
            };
            runtime()?.block_on(commands::send::run(args, &mut Stdout::lock()))
        }
        Command::Targets { command } => {
            runtime()?.block_on(commands::targets::run(command, &mut Stdout::lock()))
        }
        Command::Stats { config, json } => runtime()?
            .block_on(commands::stats::run(&config, json, &mut Stdout::lock()))
            .map(|()| true),
        Command::Migrate { config } => runtime()?
            .block_on(commands::migrate::run(&config))
            .map(|()| true),
        Command::Purge { config, dry_run } => runtime()?
            .block_on(commands::purge::run(&config, dry_run, &mut Stdout::lock()))
            .map(|()| true),
        Command::Reconcile { config, fix, json } => runtime()?.block_on(commands::reconcile::run(
            &config,
            fix,
            json,
            &mut Stdout::lock(),
        )),
        Command::Providers { json, markdown } => {
            let format = match (json, markdown) {
                (true, _) => commands::providers::Format::Json,
                (_, true) => commands::providers::Format::Markdown,
                _ => commands::providers::Format::Text,
            };
            commands::providers::run(format, &mut Stdout::lock()).map(|()| true)
        }
        Command::Config { command } => commands::config::run(command).map(|()| true),
        Command::Listen {
            admin,
            token_env,
            endpoint,
            forward,
            secret_env,
            original_headers,
            since,
            state,
            json,
        } => {
            let options = crate::listen::ListenOptions {
                admin,
                token_env,
                endpoint,
                forward,
                secret_env,
                original_headers,
                since,
                state,
                json,
            };
            runtime()?
                .block_on(crate::listen::run(options, &mut Stdout::lock()))
                .map(|()| true)
                .map_err(anyhow::Error::from)
        }
        Command::Transform {
            command:
                TransformCommand::Test {
                    config,
                    target,
                    event,
                    body_file,
                    content_type,
                    event_type,
                },
        } => {
            let source = match (&event, &body_file) {
                (Some(id), _) => commands::transform::EventSource::Stored(id),
                (None, Some(path)) => commands::transform::EventSource::File {
                    path,
                    content_type: &content_type,
                    event_type: event_type.as_deref(),
                },
                (None, None) => anyhow::bail!("give --event or --body-file"),
            };
            runtime()?.block_on(commands::transform::test(
                &config,
                &target,
                source,
                &mut Stdout::lock(),
            ))
        }
        Command::Keys { command } => {
            runtime()?.block_on(commands::keys::run(command, &mut Stdout::lock()))
        }
        Command::Endpoints { command } => {
            runtime()?.block_on(commands::endpoints::run(command, &mut Stdout::lock()))
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Logs on stderr, through the log's writer thread
/// (`telemetry::log_writer`); a program embedding [`run`] that installed a
/// subscriber of its own keeps it. The guard flushes the queued lines.
fn init_logging(format: LogFormat) -> Option<LogGuard> {
    // The NATS client logs every reconnect attempt at info; a nats target's
    // own line per attempt already says `nats: not connected (…)`.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,async_nats=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (writer, guard) = log_writer::stderr();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(writer);
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    installed.ok().map(|()| guard)
}
