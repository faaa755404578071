//! The catalogue: what `hookinbox providers` and docs/providers.md tell a
//! user about each provider. Each provider module declares its own
//! [`ProviderFacts`] as a `FACTS` constant beside the code it describes; the
//! tolerance, redelivery window and coverage come from the adapter itself, so
//! the catalogue cannot drift from what is enforced.

/// What a user reads about one provider in `hookinbox providers` and docs/providers.md.
/// The tolerance, redelivery window and coverage come from the adapter itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderFacts {
    /// Human name, e.g. "Stripe".
    pub title: &'static str,
    /// The provider's own documentation of its webhook signatures.
    pub docs_url: &'static str,
    /// Algorithm, encoding and header, e.g. "HMAC-SHA256, hex, `Linear-Signature`".
    pub scheme: &'static str,
    /// The exact signed bytes, e.g. "raw body" or "`{t}.{body}`".
    pub signed_parts: &'static str,
    /// Where the event id comes from, e.g. "header `Linear-Delivery`" or "body fingerprint".
    pub id_source: &'static str,
    /// Handshake the provider requires, if any, e.g. "`hub.challenge` GET".
    pub handshake: Option<&'static str>,
    /// One request carrying several events: what the inbox stores.
    pub batch: Option<&'static str>,
    /// Where this provider's test vectors come from.
    pub vectors: VectorSource,
    /// Whether anyone holding the endpoint's secret can sign as the provider
    /// (`hookinbox send`, the `sign` feature).
    pub signing: Signing,
}

/// Who can produce this provider's signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signing {
    /// A shared secret (HMAC, a token, basic credentials): the endpoint's
    /// secret signs as well as verifies, so the adapter has a signer.
    Symmetric,
    /// A private key only the provider holds (Ed25519, ECDSA, RSA): no signer.
    Asymmetric,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorSource {
    /// Signed by the provider's official SDK (package name and registry, e.g. "stripe (PyPI)").
    OfficialSdk(&'static str),
    /// The worked example in the provider's documentation (URL).
    DocumentedExample(&'static str),
    /// The documented formula computed by an independent Python implementation (script path).
    IndependentPython(&'static str),
}
