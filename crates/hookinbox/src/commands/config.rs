//! `hookinbox config example` and `hookinbox config check`.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use super::output::{note, Stdout};
use crate::cli::ConfigCommand;
use crate::config;
use crate::service::Components;

pub(crate) fn run(command: ConfigCommand) -> anyhow::Result<()> {
    match command {
        ConfigCommand::Example => print(config::EXAMPLE),
        ConfigCommand::Check { config, json } => check(&config, json),
    }
}

/// Checks a configuration as `serve` would before it opens the database or
/// a socket — the file, then every secret, key, certificate and CA file, and
/// the encryption keys (a development key file `serve` would create may be missing) —
/// and prints the settings it resolves to: as a file in the config's own
/// shape that `config check` accepts again (see `config::printable`), or
/// with `--json` as the checked settings. Secrets are printed as their
/// sources only; an inline one as a placeholder variable.
fn check(path: &Path, json: bool) -> anyhow::Result<()> {
    let settings = config::load(path)?;
    Components::build(&settings)?;
    crate::secrets::encryption::check(&settings.encryption)?;
    for endpoint in &settings.endpoints {
        for target in &endpoint.targets {
            if matches!(target.kind, config::TargetKind::Handler) {
                note!(
                    "note: endpoint `{}`, target `{}` is a handler target: only a program that \
                     embeds hookinbox and registers a handler under that name can deliver it \
                     (the stock `hookinbox serve` refuses it unless run with --no-workers)",
                    endpoint.id,
                    target.name
                );
            }
        }
    }
    if json {
        let text = serde_json::to_string_pretty(&settings).context("printing the settings")?;
        return print(&format!("{text}\n"));
    }
    // Read again for its shape: what is printed is a file check accepts.
    let text = std::fs::read_to_string(path).context("reading the configuration again")?;
    let (text, placeholders) = config::printable(&text, &config::base_dir(path))?;
    let mut header = format!(
        "# {} is valid. The settings it resolves to, as a file `config check` accepts\n\
         # (defaults filled in, paths absolute, secrets as their sources).\n",
        path.display()
    );
    if !placeholders.is_empty() {
        header.push_str(
            "# Inline secrets are not printed: each is read from a placeholder variable\n\
             # instead. Set these (or put the values back) to use this file:\n",
        );
        for name in &placeholders {
            header.push_str(&format!("#   {name}\n"));
        }
    }
    print(&format!("{header}\n{text}"))
}

fn print(text: &str) -> anyhow::Result<()> {
    let mut stdout = Stdout::lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}
