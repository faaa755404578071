//! `hookinbox targets pause|resume|list`: the operator's hand on a
//! target's gate (docs/delivery.md, "Flow control"). The pause is a row
//! in the database, so every `serve` and `work` process honours it at its
//! next lease.

use std::io::Write;

use anyhow::{bail, Context};

use crate::cli::TargetsCommand;
use crate::config::{self, Settings};
use crate::delivery::target_states::TargetStates;
use crate::{clock, storage};

/// Prints to `out`; returns `false` when the target was already in the
/// asked-for state (the command changed nothing).
pub async fn run(command: TargetsCommand, out: &mut impl Write) -> anyhow::Result<bool> {
    match command {
        TargetsCommand::Pause { config, target } => {
            let config = config::load(&config)?;
            let (endpoint, target) = configured_target(&config, &target)?;
            let opened = storage::open(&config.storage, &config.encryption).await?;
            let paused = opened
                .target_gates()
                .pause(&endpoint, &target, clock::unix_millis())
                .await
                .context("pause")?;
            let said = if paused { "paused" } else { "already paused" };
            writeln!(out, "{endpoint}/{target} {said}")?;
            Ok(true)
        }
        TargetsCommand::Resume { config, target } => {
            let config = config::load(&config)?;
            let (endpoint, target) = configured_target(&config, &target)?;
            let opened = storage::open(&config.storage, &config.encryption).await?;
            let resumed = opened
                .target_gates()
                .resume(&endpoint, &target, clock::unix_millis())
                .await
                .context("resume")?;
            let said = if resumed { "resumed" } else { "was not paused" };
            writeln!(out, "{endpoint}/{target} {said}")?;
            Ok(true)
        }
        TargetsCommand::List { config, json } => {
            let config = config::load(&config)?;
            let reader = storage::open_reader(&config.storage, &config.encryption).await?;
            let states = TargetStates::read(&config, reader.as_ref()).await?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&states.rows)?)?;
            } else {
                states.write_table(out)?;
            }
            out.flush()?;
            Ok(true)
        }
    }
}

/// `ENDPOINT/TARGET`, checked against the configuration, so a typo does
/// not pause a target nobody delivers to.
fn configured_target(config: &Settings, name: &str) -> anyhow::Result<(String, String)> {
    let Some((endpoint, target)) = name.split_once('/') else {
        bail!("expected ENDPOINT/TARGET, got `{name}`");
    };
    let known = config
        .endpoints
        .iter()
        .filter(|e| e.id == endpoint)
        .flat_map(|e| &e.targets)
        .any(|t| t.name == target);
    if !known {
        bail!("no target `{target}` on endpoint `{endpoint}` in the configuration");
    }
    Ok((endpoint.to_owned(), target.to_owned()))
}
