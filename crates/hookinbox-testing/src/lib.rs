//! Test support for hookinbox, shared by every test that needs more than
//! its own module: the black-box tests of `crates/hookinbox/tests` (through
//! their `support` module, which adds the binary under test), the router
//! tests inside the service crate, and the `ledger` example.
//!
//! One of each, so no two helpers do the same job:
//! - [`TestConfig`]: the configuration builder (one `lab` endpoint, optional
//!   targets, anything else as extra TOML);
//! - [`lab_signed`] / [`lab_event`] / [`mailgun_signed`]: signed requests;
//! - [`client`], [`post`], [`send`]: a plain HTTP/1.1 client and its [`Answer`];
//! - [`Sink`]: a capturing HTTP target (plain or TLS), and [`ReservedPort`]
//!   for a target that is down until a test starts it;
//! - [`TestPki`]: a throwaway CA and server certificate, and [`TlsProxy`]:
//!   TLS in front of a plain broker, with its certificate;
//! - [`database`]: the store's rows read through a connection of the test's own;
//! - [`lab_stored_event`] / [`test_encryption_keys`]: events written into a
//!   store directly, with a receive time in the past;
//! - [`ledger`]: the business handler embedders' tests and the example apply.
//!
//! It depends on the store and the verifier, never on the service crate, so
//! the service's own unit tests can use it without a second copy of
//! themselves.

mod config;
pub mod database;
mod http;
pub mod ledger;
mod local_app;
mod metrics;
mod pki;
mod signed;
mod sink;
mod stored_events;
mod tls_proxy;
mod wait;

pub use config::{
    config, config_with_target, TestConfig, ENCRYPTION_KEY, ENCRYPTION_KEY_ID, LAB_SECRET,
    TARGET_SECRET,
};
pub use database::{deliveries, inbox_rows, inbox_status, payload_log_bytes, payload_log_segments};
pub use http::{client, post, retry_until_accepted, send, Answer, HttpClient};
pub use local_app::LocalApp;
pub use metrics::{families, metric_value, samples, scrape};
pub use pki::TestPki;
pub use signed::{
    basic, github_signed, lab_event, lab_signed, mailgun_signed, now, stripe_signed, Signed,
};
pub use sink::{Received, ReservedPort, Sink};
pub use stored_events::{lab_stored_event, test_encryption_keys};
pub use tls_proxy::TlsProxy;
pub use wait::eventually;
