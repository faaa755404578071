//! Keys fetched from the provider (docs/architecture.md §3): PayPal, AWS
//! SNS and Plaid sign with private keys of their own and name, in each
//! request, the key that verifies it (a certificate URL, a key id). The verify crate only names that key
//! (`Adapter::key_reference`); this module gets it, so the verify crate
//! stays free of I/O:
//!
//! - [`allowlist`]: the one place that decides which URLs may be fetched at
//!   all — `https`, the provider's own hosts, its documented path — and
//!   which name the certificate must carry. A request naming anything else
//!   is refused (`signature`) without a connection being made.
//! - [`https_client`]: the HTTPS client (rustls on ring, Mozilla's roots).
//! - [`plaid_key`]: Plaid's key API (`/webhook_verification_key/get`),
//!   asked by key id with the endpoint's credentials, on the endpoint's
//!   Plaid environment only.
//! - [`certificate`]: checks a served certificate chain against the trust
//!   roots and the provider's documented name, and takes its public key.
//! - [`key_cache`]: one fetch per key at a time, off the request path; a
//!   request waits for it at most [`key_cache::REQUEST_WAIT`] and is
//!   answered 503 (`unavailable`) while the key cannot be had; keys are kept
//!   until their certificate expires (at most a day).
//! - [`test_override`]: the only way to point the fetches at a test server
//!   (its trust roots and address), from the environment, for tests.

pub mod allowlist;
pub mod certificate;
pub mod https_client;
pub mod key_cache;
pub mod plaid_key;
pub mod test_override;

pub use key_cache::{KeyCache, KeyFetchError};
pub use plaid_key::PlaidCredentials;
