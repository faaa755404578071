//! hookinbox's black-box tests, one module per area, in one test binary.
//!
//! One binary instead of one per file: each file used to be a crate of its
//! own that linked rustls, hyper, tokio-postgres and async-nats again, forty
//! links per build (issue #19). Cargo and svix-server lay their tests out
//! the same way (`tests/testsuite/main.rs`, `tests/it/main.rs`). A module
//! runs alone as a filter: `cargo test -p hookinbox --test it -- contract::`.

// `#[macro_use]`: `on_both_backends!` is in scope in every module below.
#[macro_use]
mod support;

mod markdown_links;
mod markdown_paths;

mod admin;
mod admin_api;
mod api_fuzz;
mod broker_tls;
mod browser;
mod cli;
mod commit_deadline;
mod compression;
mod concurrency;
mod config_command;
mod contract;
mod crash;
mod delivery;
mod delivery_crash;
mod delivery_tls;
mod deploy;
mod disk_full;
mod docs_links;
mod embedding;
mod encryption;
mod flow_control;
mod handler_target;
mod handshake;
mod handshake_meta;
mod handshake_okta_dropbox;
mod handshake_probes;
mod handshake_secrets;
mod ingress_tls;
mod key_check;
mod key_fetch;
mod key_rotation;
mod listen;
mod log_lines;
mod metrics;
mod monitoring;
mod mqtt_target;
mod nats_target;
mod otel_traces;
mod postgres_processes;
mod postgres_service;
mod providers_catalogue;
mod public_abuse;
mod public_limits;
mod purge_crash;
mod purge_gone;
mod rabbitmq_target;
mod readiness;
mod readme_recipes;
mod reconcile;
mod redis_stream_target;
mod refusals;
mod reload;
mod replay_routing;
mod replay_unsigned_id;
mod retention;
mod routing;
mod secret_rules;
mod segment_identity;
mod send_command;
mod transform;
