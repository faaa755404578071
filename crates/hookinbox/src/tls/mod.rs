//! TLS, both ways the service speaks it, on rustls with the ring provider
//! chosen explicitly (never a process-wide default another crate could
//! change):
//!
//! - [`listener`]: the public listener's server side (`[server.tls]`),
//!   with a deadline on every handshake, presenting
//!   [`certificate`]'s pair, which SIGHUP replaces without a restart.
//! - [`client`]: the client side, for `https://` targets and the providers'
//!   APIs a reconcile pass calls: which roots a connection trusts, and how a
//!   failed handshake is described on a delivery row.

pub(crate) mod certificate;
pub(crate) mod client;
pub(crate) mod listener;
