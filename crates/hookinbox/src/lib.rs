//! hookinbox: a durable webhook receiver.
//!
//! The service crate wires the pure verifier (`hookinbox-verify`) and the
//! store (`hookinbox-store`) behind an HTTP ingress, and carries the CLI.
//! The rule everything serves: a 2xx means "durably accepted (or already
//! accepted)", and is never sent before the commit that makes it true.

pub mod admin;
pub mod app_state;
pub mod basic_auth;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod delivery;
pub mod endpoint;
mod error;
pub mod failpoint;
pub mod ingress;
pub(crate) mod json_line;
pub mod reload;
pub mod server;
mod service;
pub mod storage;
pub mod telemetry;
pub mod tls_certificate;
pub mod tls_listener;

pub use delivery::HandlerRegistry;
pub use error::Error;
pub use server::shutdown_signal;
pub use service::Service;

pub use hookinbox_store::{HandledEvent, HandlerError, SqliteHandler, Store};

/// The storage seam (`hookinbox-store`).
pub use hookinbox_store as store;
/// Provider signature verification (`hookinbox-verify`).
pub use hookinbox_verify as verify;
