//! `hookinbox serve`: the [`Service`] on the configuration file, until
//! SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::path::Path;

use crate::{config, shutdown_signal, HandlerRegistry, Service};

/// The listeners' addresses given on the command line, over the file's.
pub(crate) struct Addresses {
    /// `--listen`: overrides `server.listen`; the bound address is printed
    /// on stdout for scripts that start it on port 0.
    pub listen: Option<SocketAddr>,
    /// `--admin-listen`: overrides `admin.listen`, so two processes on one
    /// host can share one file.
    pub admin_listen: Option<SocketAddr>,
}

pub(crate) async fn run(
    config_path: &Path,
    addresses: Addresses,
    workers: bool,
    handlers: HandlerRegistry,
) -> anyhow::Result<()> {
    let mut settings = config::load(config_path)?;
    if let Some(listen) = addresses.listen {
        settings.server.listen = listen;
    }
    if let Some(listen) = addresses.admin_listen {
        settings.admin = Some(config::Admin::listening_on(settings.admin, listen)?);
    }
    Service::from_settings(settings)
        .config_file(config_path)
        .handlers(handlers)
        .workers(workers)
        .announce_on_stdout()
        .run_until(shutdown_signal())
        .await?;
    Ok(())
}
