//! One module per CLI command.

pub mod config;
pub mod event_text;
pub mod events;
pub mod keys;
pub mod migrate;
pub mod output;
pub mod serve;
pub mod stats;
pub mod verify;
pub mod work;
