//! SIGHUP: re-read, without a restart, what can change while the service
//! runs.
//!
//! `systemctl reload` (the unit in `deploy/` sends `kill -HUP`) and
//! operators expect SIGHUP to mean "re-read", never "exit". A process that
//! installs no handler takes the default action and dies, so the handler is
//! installed at every start, whether or not anything is reloadable: with
//! nothing registered a SIGHUP is logged and changes nothing.
//!
//! Whatever can be re-read implements [`Reloadable`] and is handed to
//! [`reload_on_sighup`]: today the TLS certificate of the public listener;
//! next, the endpoints' key rings (issue #9).

use std::sync::Arc;

/// Something a SIGHUP re-reads. A reload that fails keeps what is in use
/// and says why in the log; it never stops the service.
pub trait Reloadable: Send + Sync + 'static {
    /// Re-reads its sources and logs the outcome (one line, naming the
    /// field at fault if any).
    fn reload(&self);
}

/// Installs the SIGHUP handler, before this returns (from then on a SIGHUP
/// never takes the default action, exit), and runs every reloadable in turn
/// on each SIGHUP for as long as the runtime runs.
pub fn reload_on_sighup(reloadables: Vec<Arc<dyn Reloadable>>) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangups = signal(SignalKind::hangup())?;
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                reload_all(&reloadables);
            }
        });
    }
    #[cfg(not(unix))]
    drop(reloadables);
    Ok(())
}

fn reload_all(reloadables: &[Arc<dyn Reloadable>]) {
    if reloadables.is_empty() {
        tracing::info!(message = "SIGHUP received; nothing to reload.");
        return;
    }
    for reloadable in reloadables {
        reloadable.reload();
    }
}
