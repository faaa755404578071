//! `hookinbox stats`

use std::path::Path;

use crate::config;
use crate::storage;

pub fn run(config_path: &Path, json: bool) -> anyhow::Result<()> {
    let config = config::load(config_path)?;
    let reader = storage::open_reader(&config.storage)?;
    let stats = reader.stats()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
        return Ok(());
    }
    println!("{:<24} {:<10} {:>10}", "ENDPOINT", "STATUS", "COUNT");
    for (endpoint, by_status) in &stats.by_endpoint {
        for (status, count) in by_status {
            println!("{endpoint:<24} {status:<10} {count:>10}");
        }
    }
    println!("{:<24} {:<10} {:>10}", "total", "", stats.total);
    if let Some(disk) = &stats.disk {
        println!(
            "\ndatabase {} bytes; payload log {} bytes in {} segment(s)",
            disk.database_bytes, disk.payload_log_bytes, disk.payload_segments
        );
    }
    Ok(())
}
