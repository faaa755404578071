//! The verify crate's black-box tests, one module per area, in one test
//! binary instead of one per file (issue #19; cargo and svix-server lay
//! their tests out the same way). A module runs alone as a filter:
//! `cargo test -p hookinbox-verify --test it -- signed_vectors::`.

mod support;

mod asym_provider_fixtures;
mod formula_fixtures;
mod key_fetch_fixtures;
mod sdk_fixtures;
mod signed_vectors;
mod signers;
mod signing_properties;
