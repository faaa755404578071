//! `hookinbox stats`

use std::io::Write;
use std::path::Path;

use crate::config;
use crate::delivery::target_states::TargetStates;
use crate::storage;

/// Prints the counts to `out`, as a table or as JSON.
pub async fn run(config_path: &Path, json: bool, out: &mut impl Write) -> anyhow::Result<()> {
    let config = config::load(config_path)?;
    let reader = storage::open_reader(&config.storage, &config.encryption).await?;
    let stats = reader.stats().await?;
    let targets = TargetStates::read(&config, reader.as_ref()).await?;
    if json {
        let mut shown = serde_json::to_value(&stats)?;
        if let Some(object) = shown.as_object_mut() {
            object.insert("targets".into(), serde_json::to_value(&targets.rows)?);
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&shown)?)?;
        out.flush()?;
        return Ok(());
    }
    writeln!(out, "{:<24} {:<10} {:>10}", "ENDPOINT", "STATUS", "COUNT")?;
    for (endpoint, by_status) in &stats.by_endpoint {
        for (status, count) in by_status {
            writeln!(out, "{endpoint:<24} {status:<10} {count:>10}")?;
        }
    }
    writeln!(out, "{:<24} {:<10} {:>10}", "total", "", stats.total)?;
    writeln!(out)?;
    targets.write_table(out)?;
    if let Some(disk) = &stats.disk {
        writeln!(
            out,
            "\ndatabase {} bytes; payload log {} bytes in {} segment(s)",
            disk.database_bytes, disk.payload_log_bytes, disk.payload_segments
        )?;
    }
    out.flush()?;
    Ok(())
}
