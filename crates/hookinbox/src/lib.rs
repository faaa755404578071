//! hookinbox: a durable webhook receiver.
//!
//! It receives webhooks from payment and SaaS providers, verifies each
//! request, stores each logical event exactly once, and delivers it to
//! targets with retries. The rule everything serves: a 2xx means "durably
//! accepted (or already accepted)", and is never sent before the commit
//! that makes it true.
//!
//! The `hookinbox` binary is this library's [`cli::run`]. A program that
//! embeds it runs a [`Service`] from a configuration file, most often to
//! run its own business logic as a `kind = "handler"` target: the delivery
//! workers call its [`SqliteHandler`] (or, with `storage.url =
//! "postgres://…"`, its [`PostgresHandler`]) inside the transaction that
//! records the delivery, so each event changes the program's state exactly
//! once, and a failing handler is retried without the provider seeing an
//! error.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use hookinbox::rusqlite::Connection;
//! use hookinbox::{HandledEvent, HandlerError, HandlerRegistry, Service, SqliteHandler};
//!
//! /// Books each event once, in the transaction that marks it delivered.
//! struct Ledger;
//!
//! impl SqliteHandler for Ledger {
//!     fn handle(&self, conn: &Connection, event: &HandledEvent<'_>) -> Result<(), HandlerError> {
//!         conn.execute(
//!             "INSERT INTO ledger (inbox_id, payload) VALUES (?1, ?2)",
//!             (event.inbox_id, event.payload),
//!         )
//!         .map_err(|error| HandlerError(error.to_string()))?;
//!         Ok(())
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), hookinbox::Error> {
//!     // hookinbox.toml has a target `name = "ledger"`, `kind = "handler"`.
//!     let handlers = HandlerRegistry::new().register("ledger", Arc::new(Ledger));
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await.expect("bind");
//!     Service::from_config_file("hookinbox.toml")?
//!         .handlers(handlers)
//!         .listener(listener)
//!         // Serves until SIGTERM or Ctrl-C, then drains and returns.
//!         .run_until(hookinbox::shutdown_signal())
//!         .await
//! }
//! ```
//!
//! The rest of the crate — ingress, delivery, the server loop, telemetry —
//! is internal: reach it through [`Service`] and the [`config`] it runs.
//! The building blocks it wires are public crates of their own, re-exported
//! here: [`verify`] (provider signatures, no I/O) and [`store`] (the
//! [`Store`] seam and its SQLite and PostgreSQL implementations).

#![warn(missing_docs)]

pub(crate) mod admin;
pub(crate) mod app_state;
pub mod cli;
pub(crate) mod clock;
pub(crate) mod commands;
pub mod config;
pub(crate) mod delivery;
pub(crate) mod endpoint;
mod error;
pub(crate) mod event_replay;
pub(crate) mod event_selection;
pub(crate) mod failpoint;
pub(crate) mod form_body;
pub(crate) mod http_client;
pub(crate) mod ingress;
pub(crate) mod json_line;
pub(crate) mod key_fetch;
pub(crate) mod listen;
pub(crate) mod metrics_sampler;
pub(crate) mod periodic;
pub(crate) mod reconcile;
pub(crate) mod reload;
pub(crate) mod replay_routing;
pub(crate) mod retention;
pub(crate) mod routing;
pub(crate) mod secrets;
pub(crate) mod server;
mod service;
pub(crate) mod storage;
pub(crate) mod target_pause;
pub(crate) mod target_state_sampler;
pub(crate) mod telemetry;
pub(crate) mod tls;
pub(crate) mod traces;
pub(crate) mod transform;

pub use delivery::HandlerRegistry;
pub use error::Error;
pub use server::shutdown_signal;
pub use service::Service;

pub use hookinbox_store::{HandledEvent, HandlerError, PostgresHandler, SqliteHandler, Store};

/// The storage seam (`hookinbox-store`): the [`Store`] trait, its SQLite
/// and PostgreSQL implementations, and the types a handler or a store of its own needs.
pub use hookinbox_store as store;
/// The PostgreSQL driver a [`PostgresHandler`] is handed a transaction of,
/// at the version the store uses.
pub use hookinbox_store::tokio_postgres;
/// Provider signature verification (`hookinbox-verify`): pure, no I/O.
pub use hookinbox_verify as verify;
/// The SQLite crate a [`SqliteHandler`] is handed a connection of, at the
/// version the store uses.
pub use rusqlite;
