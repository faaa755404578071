//! One module per CLI command.

pub mod config;
pub mod endpoints;
pub mod event_text;
pub mod events;
pub mod keys;
pub mod keys_check;
pub mod keys_rewrap;
pub mod migrate;
pub mod output;
pub mod progress;
pub mod providers;
pub mod purge;
pub mod reconcile;
pub mod send;
pub mod serve;
pub mod stats;
pub mod targets;
pub mod transform;
pub mod verify;
pub mod work;
