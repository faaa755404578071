//! `hookinbox work`: delivery workers without ingress, so the two can scale
//! separately (on SQLite the processes share the file; each commit takes
//! the file's write lock in turn). With `--admin-listen` it serves the
//! admin listener too (its metrics, `hookinbox_target_state` among them,
//! and `/readyz`); without, none: the `[admin]` address in a file shared
//! with `serve` is `serve`'s.

use std::net::SocketAddr;
use std::path::Path;

use crate::{config, shutdown_signal, HandlerRegistry, Service};

/// Delivers until SIGTERM or Ctrl-C.
pub(crate) async fn run(
    config_path: &Path,
    admin_listen: Option<SocketAddr>,
    handlers: HandlerRegistry,
) -> anyhow::Result<()> {
    let mut settings = config::load(config_path)?;
    settings.admin = match admin_listen {
        Some(listen) => Some(config::Admin::listening_on(settings.admin, listen)?),
        None => None,
    };
    Service::from_settings(settings)
        .config_file(config_path)
        .handlers(handlers)
        .work_until(shutdown_signal())
        .await?;
    Ok(())
}
