//! `hookinbox migrate`: the schema step of a deployment, run once before
//! new processes start (or left to them: `serve` and `work` migrate at start
//! too). Concurrent runs are serialised by the database (an advisory lock
//! on PostgreSQL, the write lock on SQLite), so ten processes starting at
//! once are safe.

use std::path::Path;

use super::output::note;
use crate::{config, storage};

/// Migrates the configured database and says which one.
pub async fn run(config_path: &Path) -> anyhow::Result<()> {
    let config = config::load(config_path)?;
    storage::migrate(&config.storage, &config.encryption).await?;
    note!(
        "database {} is at this build's schema",
        config.storage.database.describe()
    );
    Ok(())
}
