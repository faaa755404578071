use std::process::ExitCode;

use clap::Parser;
use hookinbox::cli::{Cli, Command, LogFormat};
use hookinbox::commands;
use hookinbox::commands::output::{error_line, is_stdout_closed, note_line, Stdout};
use tracing_subscriber::EnvFilter;

/// Exit status: 0 success (or stdout closed by its reader), 1 a negative
/// answer (`verify` refused, `events show` found nothing), 2 an error.
fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let result = match cli.command {
        Command::Serve {
            config,
            listen,
            no_workers,
        } => runtime()
            .and_then(|runtime| {
                runtime.block_on(commands::serve::run(&config, listen, !no_workers))
            })
            .map(|()| true),
        Command::Work { config } => runtime()
            .and_then(|runtime| runtime.block_on(commands::work::run(&config)))
            .map(|()| true),
        Command::Events { command } => runtime().and_then(|runtime| {
            runtime.block_on(commands::events::run(command, &mut Stdout::lock()))
        }),
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
        Command::Stats { config, json } => {
            commands::stats::run(&config, json, &mut Stdout::lock()).map(|()| true)
        }
        Command::Config { command } => commands::config::run(command).map(|()| true),
    };
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

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

fn init_logging(format: LogFormat) {
    // The NATS client logs every reconnect attempt at info; a nats target's
    // own line per attempt already says `nats: not connected (…)`.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,async_nats=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
