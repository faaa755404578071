//! Why the service could not start (or stopped): the library's one error
//! type.

use std::net::SocketAddr;

use hookinbox_store::StoreError;

use crate::config::ConfigError;

/// Why a [`Service`](crate::Service) could not start.
///
/// Each message says what failed; the cause, where there is one, is its
/// [`source`](std::error::Error::source) and is not repeated in the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot be used: its text, a rule it breaks, or a
    /// file it names (a secret, the admin token, the TLS certificate and
    /// key, a CA file). The message names the field.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The configured database could not be opened, reached or migrated.
    #[error("storage.url ({database})")]
    Storage {
        /// The SQLite file, or the PostgreSQL URL without its password.
        database: String,
        /// What the store reported.
        #[source]
        source: StoreError,
    },
    /// The encryption key ring does not fit the database (a wrong key
    /// under a known id, or a key that sealed rows missing from the ring):
    /// the service does not start (docs/architecture.md §6).
    #[error("encryption: the key ring does not fit the database at storage.url ({database})")]
    Keys {
        /// The SQLite file, or the PostgreSQL URL without its password.
        database: String,
        /// Each mismatch, naming its key id.
        #[source]
        source: hookinbox_store::KeyRingMismatch,
    },
    /// The public listener could not be bound (`server.listen`), or its
    /// address read.
    #[error("cannot listen on {address}")]
    Listen {
        /// The address asked for.
        address: SocketAddr,
        /// Why (address in use, permission denied, …).
        #[source]
        source: std::io::Error,
    },
    /// The admin listener could not be bound (`admin.listen`).
    #[error("admin.listen: cannot listen on {address}")]
    AdminListen {
        /// The address asked for.
        address: SocketAddr,
        /// Why (address in use, permission denied, …).
        #[source]
        source: std::io::Error,
    },
    /// A `kind = "handler"` target has no handler registered under its name
    /// (see [`HandlerRegistry`](crate::HandlerRegistry)). The stock binary
    /// registers none.
    #[error(
        "endpoint {endpoint:?}, target {target:?}: a handler target, but no {backend} handler \
         is registered under that name (handler targets need a program that embeds hookinbox \
         and registers one for its storage backend)"
    )]
    HandlerMissing {
        /// The endpoint id.
        endpoint: String,
        /// The target's name, which the handler must be registered under.
        target: String,
        /// The configured backend (`sqlite`, `postgres`), whose handler
        /// kind is needed.
        backend: &'static str,
    },
    /// A handler target with a store given to
    /// [`Service::store`](crate::Service::store): a handler commits its change in the
    /// transaction of the configured store, which is then not opened.
    #[error(
        "endpoint {endpoint:?}, target {target:?}: a handler target runs in the configured \
         store's transactions; it cannot be delivered through a store given to \
         Service::store (run without workers, or without that store)"
    )]
    HandlerNeedsConfiguredStore {
        /// The endpoint id.
        endpoint: String,
        /// The target's name.
        target: String,
    },
    /// The SIGHUP handler (reloads) could not be installed.
    #[error("cannot install the SIGHUP handler")]
    Signal(#[source] std::io::Error),
}
