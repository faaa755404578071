//! `hookinbox targets pause|resume|list`: the operator's hand on a
//! target's gate (docs/delivery.md, "Flow control"). The pause is a row
//! in the database, so every `serve` and `work` process honours it at its
//! next lease.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context};

use crate::cli::TargetsCommand;
use crate::config;
use crate::delivery::target_states::{configured_targets, TargetStates};
use crate::target_pause::{PauseAction, Requester, TargetPause};
use crate::{clock, storage};

/// Prints to `out`; returns `false` when the target was already in the
/// asked-for state (the command changed nothing).
pub async fn run(command: TargetsCommand, out: &mut impl Write) -> anyhow::Result<bool> {
    match command {
        TargetsCommand::Pause { config, target } => {
            let changed = change(&config, &target, PauseAction::Pause).await?;
            let said = if changed { "paused" } else { "already paused" };
            writeln!(out, "{target} {said}")?;
            Ok(true)
        }
        TargetsCommand::Resume { config, target } => {
            let changed = change(&config, &target, PauseAction::Resume).await?;
            let said = if changed { "resumed" } else { "was not paused" };
            writeln!(out, "{target} {said}")?;
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

/// Pauses or resumes `ENDPOINT/TARGET`, checked against the
/// configuration (the shared [`TargetPause`]); whether that changed it.
async fn change(config: &Path, name: &str, action: PauseAction) -> anyhow::Result<bool> {
    let Some((endpoint, target)) = name.split_once('/') else {
        bail!("expected ENDPOINT/TARGET, got `{name}`");
    };
    let config = config::load(config)?;
    let configured = configured_targets(&config);
    // Checked before the database is opened, so a typo costs no connection.
    if !configured.iter().any(|(e, t)| e == endpoint && t == target) {
        bail!("no target `{target}` on endpoint `{endpoint}` in the configuration");
    }
    let opened = storage::open(&config.storage, &config.encryption).await?;
    let changed = TargetPause {
        endpoint,
        target,
        action,
        requester: Requester::Cli,
    }
    .apply(
        &configured,
        opened.target_gates().as_ref(),
        clock::unix_millis(),
    )
    .await
    .context(action.as_str())?;
    Ok(changed)
}
