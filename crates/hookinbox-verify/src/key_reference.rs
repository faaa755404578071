//! Keys a provider serves from its own hosts (docs/architecture.md §3,
//! "Keys fetched from the provider").
//!
//! PayPal, AWS SNS and Plaid sign with private keys of their own and name,
//! in each request, which of their public keys verifies it: a certificate
//! URL (PayPal's `PAYPAL-CERT-URL`, SNS's `SigningCertURL`) or a key id
//! (Plaid's JWT `kid`). This crate does no I/O, so an adapter only *names*
//! the key ([`Adapter::key_reference`](crate::Adapter::key_reference)); the
//! service fetches it — from the provider's own hosts only, verified against
//! its trust roots, cached — and hands it back through [`FetchedKeys`] when
//! it runs the pipeline ([`crate::Verifier::verify_with_keys`]).

use crate::Key;

/// The secret version name recorded for a request verified by a key its
/// provider served (there is no configured version to name).
pub const FETCHED_KEY_VERSION: &str = "provider-key";

/// The key one request names. Attacker-controlled until the service has
/// checked it against its allowlist: it is only ever a *name* to look up.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyReference {
    /// An X.509 certificate at an `https` URL the request names; its public
    /// key verifies the signature.
    Certificate { url: String },
    /// A key id the provider's key API serves (a JWT `kid`).
    KeyId { kid: String },
}

impl KeyReference {
    /// A short description for logs: the URL or the key id (neither secret).
    pub fn describe(&self) -> &str {
        match self {
            KeyReference::Certificate { url } => url,
            KeyReference::KeyId { kid } => kid,
        }
    }
}

/// Where the pipeline finds the keys the service fetched for a request.
pub trait FetchedKeys {
    /// The key `reference` resolved to, when the service has it.
    fn key_for(&self, reference: &KeyReference) -> Option<Key>;
}

/// No fetched keys: what [`crate::Verifier::verify`] uses, so a provider
/// that needs one refuses every request (`signature`).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoFetchedKeys;

impl FetchedKeys for NoFetchedKeys {
    fn key_for(&self, _reference: &KeyReference) -> Option<Key> {
        None
    }
}

/// One key already fetched for one reference (what the service passes for
/// one request, and what tests use).
#[derive(Debug, Clone)]
pub struct ResolvedKey {
    pub reference: KeyReference,
    pub key: Key,
}

impl FetchedKeys for ResolvedKey {
    fn key_for(&self, reference: &KeyReference) -> Option<Key> {
        (reference == &self.reference).then(|| self.key.clone())
    }
}
