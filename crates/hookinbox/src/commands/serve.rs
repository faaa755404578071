//! `hookinbox serve`: the [`Service`] on the configuration file, until
//! SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::path::Path;

use crate::{config, shutdown_signal, HandlerRegistry, Service};

/// `listen` overrides `server.listen`; the bound address is printed on
/// stdout for scripts that start it on port 0.
pub(crate) async fn run(
    config_path: &Path,
    listen: Option<SocketAddr>,
    workers: bool,
    handlers: HandlerRegistry,
) -> anyhow::Result<()> {
    let mut settings = config::load(config_path)?;
    if let Some(listen) = listen {
        settings.server.listen = listen;
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
