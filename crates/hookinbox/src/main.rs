use std::process::ExitCode;

use clap::Parser;
use hookinbox::cli::{Cli, Command, LogFormat};
use hookinbox::commands;
use tracing_subscriber::EnvFilter;

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
        Command::Events { command } => {
            runtime().and_then(|runtime| runtime.block_on(commands::events::run(command)))
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
        ),
        Command::Stats { config, json } => commands::stats::run(&config, json).map(|()| true),
        Command::Config { command } => commands::config::run(command).map(|()| true),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error:#}");
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
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
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
