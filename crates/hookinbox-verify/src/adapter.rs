//! The seam between the one verification pipeline and each provider.

#[cfg(feature = "sign")]
use crate::signer::{Outgoing, SignError, SignedRequest};
use crate::{
    Handover, Key, KeyError, KeyReference, Outcome, Probe, ProviderFacts, Refusal, Reply, Request,
    SignatureClaim, SignatureCoverage,
};

/// What one provider's webhook scheme looks like. An adapter is pure: no I/O,
/// no clock (the pipeline passes `now` where it matters), no state that
/// changes per request.
///
/// The pipeline calls, in order: [`Adapter::claim`] (read signature metadata
/// from headers — never from a re-serialised body), the key-ring check of the
/// claim, the timestamp window, and only then [`Adapter::envelope`] on the
/// verified body.
pub trait Adapter: Send + Sync + std::fmt::Debug {
    /// The provider name used in configuration (`provider = "stripe"`).
    fn name(&self) -> &'static str;

    /// The catalogue entry users read (`hookinbox providers`, docs/providers.md).
    fn facts(&self) -> &'static ProviderFacts;

    /// The timestamp tolerance the provider documents, or `None` when the
    /// scheme signs no timestamp.
    fn default_tolerance_seconds(&self) -> Option<u64>;

    /// How long the provider may redeliver one event, in seconds: the dedup
    /// record of an event must be kept at least this long.
    fn redelivery_window_seconds(&self) -> u64;

    /// What the provider's signature covers: the body, the event id, the
    /// event type. Required, because the service trusts an id or a type only
    /// as far as a signature covers it (see [`crate::coverage`]); each
    /// adapter says why in a line beside its answer.
    fn coverage(&self) -> SignatureCoverage;

    /// Turns one configured secret string into a key, the way this provider
    /// encodes its secrets.
    fn parse_key(&self, secret: &str) -> Result<Key, KeyError>;

    /// Reads the signed timestamp, the exact signed bytes and every presented
    /// signature from the request.
    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal>;

    /// Reads the envelope of the verified request. `key` is the key that
    /// verified it, for handshakes that must answer with a MAC.
    fn envelope(&self, request: &Request<'_>, key: &Key) -> Result<Outcome, Refusal>;

    /// For a provider that signs with a key it serves from its own hosts
    /// (see [`crate::key_reference`]): which key this request names, read
    /// from its headers or body without verifying anything. `Ok(None)` — the
    /// default — for providers verified with configured secrets.
    fn key_reference(&self, _request: &Request<'_>) -> Result<Option<KeyReference>, Refusal> {
        Ok(None)
    }

    /// Whether this provider's keys come from its own hosts
    /// ([`Adapter::key_reference`]) rather than from configured secrets;
    /// such an endpoint needs no `[[endpoint.secret]]`.
    fn fetches_keys(&self) -> bool {
        false
    }

    /// Answers a bodiless probe of the webhook URL (see [`crate::probe`]),
    /// or `None` — the default — when the provider sends none, so the
    /// request is refused as a wrong method.
    fn probe(&self, _probe: &Probe<'_>) -> Option<Reply> {
        None
    }

    /// Answers the unsigned GET some providers send to check a URL before
    /// they send it events (Meta's `hub.challenge`), from the request's raw
    /// query string: `None` for providers that send none, and the service
    /// refuses every GET to their endpoints as before (405). Such a check
    /// carries no signature; it proves knowledge of a token from the
    /// adapter's settings, which the adapter compares in constant time.
    /// The answer is never stored.
    fn verification_request(&self, _query: Option<&str>) -> Option<Result<Reply, Refusal>> {
        None
    }

    /// Recognises the unsigned request in which the provider hands over the
    /// secret it will sign with (Asana's `X-Hook-Secret`, Notion's
    /// `verification_token`, see [`crate::handover`]): `None` — the default —
    /// for every other request, which then goes through the pipeline. The
    /// service alone decides whether to keep the secret.
    fn handover(&self, _request: &Request<'_>) -> Option<Result<Handover, Refusal>> {
        None
    }

    /// Whether the provider hands its signing secret over at run time
    /// ([`Adapter::handover`]): then an endpoint may start with no secret
    /// configured, and verifies nothing until one is handed over.
    fn learns_secrets(&self) -> bool {
        false
    }

    /// Writes the request the provider would send for `outgoing` (see
    /// [`crate::signer`]). Every provider whose catalogue entry says
    /// [`crate::Signing::Symmetric`] answers it; the default is the answer
    /// of the asymmetric ones, whose private key nobody else holds.
    #[cfg(feature = "sign")]
    fn sign(&self, _outgoing: &Outgoing<'_>) -> Result<SignedRequest, SignError> {
        Err(SignError::Asymmetric {
            provider: self.name(),
        })
    }
}
