//! One module per CLI command.

pub mod serve;
pub mod stats;
pub mod verify;
