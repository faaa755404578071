//! `hookinbox keys check`: the start-up key check of `serve` and `work`
//! (docs/architecture.md §6), offline and read only, so an operator can
//! try a key ring before a restart: each key id's check value must open
//! under its configured key, and every key id that sealed rows must be in
//! the ring. It records nothing; `serve` records a new key id's value.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use hookinbox_store::KeyCheck;

use crate::{config, storage};

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct Report {
    /// Whether the ring fits the database.
    ok: bool,
    /// A development key file is missing and the database is empty:
    /// `serve` will create the key.
    key_file_to_create: bool,
    #[serde(flatten)]
    check: KeyCheck,
}

/// Prints the check to `out`; `false` when the ring does not fit.
pub async fn check(config_path: &Path, json: bool, out: &mut impl Write) -> anyhow::Result<bool> {
    let settings = config::load(config_path)?;
    let found = storage::check_keys(&settings.storage, &settings.encryption).await?;
    let report = Report {
        ok: found
            .as_ref()
            .is_none_or(|check| check.mismatches.is_empty()),
        key_file_to_create: found.is_none(),
        check: found.unwrap_or_default(),
    };
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write_text(&report, out)?;
    }
    out.flush()?;
    Ok(report.ok)
}

fn write_text(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    let check = &report.check;
    if report.key_file_to_create {
        writeln!(
            out,
            "ok: the database is empty and a development key file is missing: serve will create it"
        )?;
        return Ok(());
    }
    for id in &check.verified {
        writeln!(out, "key {id}: verified")?;
    }
    for id in &check.unrecorded {
        writeln!(
            out,
            "key {id}: no check value yet (the next serve or work records it)"
        )?;
    }
    if !check.used.is_empty() {
        writeln!(out, "rows are sealed under: {}", check.used.join(", "))?;
    }
    for mismatch in &check.mismatches {
        writeln!(out, "error: {mismatch}")?;
    }
    if report.ok {
        writeln!(out, "ok: the key ring fits the database")?;
    }
    Ok(())
}
