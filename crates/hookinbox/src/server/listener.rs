//! Binding a listener for the open internet: a listen backlog larger than
//! the default (connections wait there while the listener is at its
//! connection cap), and the process's open-file limit raised to its hard
//! limit so the cap, not `EMFILE`, is what bounds connections.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket};

/// Binds `address` with a listen backlog of `backlog` (the kernel caps it
/// at `net.core.somaxconn`).
pub fn bind(address: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = if address.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // As `TcpListener::bind` does: a restart does not wait out TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(backlog)
}

/// Raises the soft open-file limit to the hard limit; returns the limit
/// now in force (`None` where it cannot be read).
pub fn raise_open_file_limit() -> Option<u64> {
    let (soft_before, _) = rlimit::Resource::NOFILE.get().ok()?;
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => {
            if limit > soft_before {
                tracing::info!(
                    message = "Raised the open file limit to its hard limit.",
                    from = soft_before,
                    to = limit
                );
            }
            Some(limit)
        }
        Err(error) => {
            tracing::warn!(message = "Could not raise the open file limit.", %error, limit = soft_before);
            Some(soft_before)
        }
    }
}
