//! One module per CLI command.

pub mod config;
pub mod events;
pub mod serve;
pub mod stats;
pub mod verify;
pub mod work;
