//! `hookinbox stats`

use std::io::Write;
use std::path::Path;

use crate::config;
use crate::storage;

/// Prints the counts to `out`, as a table or as JSON.
pub async fn run(config_path: &Path, json: bool, out: &mut impl Write) -> anyhow::Result<()> {
    let config = config::load(config_path)?;
    let reader = storage::open_reader(&config.storage, &config.encryption).await?;
    let stats = reader.stats().await?;
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&stats)?)?;
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
