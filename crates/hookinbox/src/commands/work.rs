//! `hookinbox work`: delivery workers without ingress, so the two can scale
//! separately (on SQLite the processes share the file; each commit takes
//! the file's write lock in turn).

use std::path::Path;

use crate::{shutdown_signal, HandlerRegistry, Service};

/// Delivers until SIGTERM or Ctrl-C.
pub(crate) async fn run(config_path: &Path, handlers: HandlerRegistry) -> anyhow::Result<()> {
    Service::from_config_file(config_path)?
        .handlers(handlers)
        .work_until(shutdown_signal())
        .await?;
    Ok(())
}
