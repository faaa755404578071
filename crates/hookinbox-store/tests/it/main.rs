//! The store's black-box tests, one module per area, in one test binary:
//! one link of rusqlite, tokio-postgres and rustls instead of one per file
//! (issue #19; cargo and svix-server lay their tests out the same way). A
//! module runs alone as a filter: `cargo test -p hookinbox-store --test it
//! -- conformance::`.

mod support;

mod compression;
mod conformance;
mod postgres;
mod sqlite;
