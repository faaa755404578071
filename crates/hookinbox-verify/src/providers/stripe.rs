//! `stripe` — Stripe webhook signatures.
//!
//! - Header: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…][,v0=…]`.
//!   Several `v1` entries appear while Stripe rolls a secret; any one may
//!   match. `v0` (test-mode legacy) is never trusted.
//! - Signed bytes: `"{t}.{raw body}"`, HMAC-SHA256 keyed with the whole secret
//!   string including its `whsec_` prefix (as Stripe's SDKs do).
//! - Tolerance: 300 s (the SDKs' default), checked in both directions.
//! - Event id: body `id` (`evt_…`), the same on every retry of one event.
//!   Type: body `type`. Object id: `data.object.id`. Created: `created`.
//!   Stripe gives no object version, so none is claimed.
//! - Redelivery window: up to 3 days of retries in live mode.

use crate::envelope::JsonFields;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureList, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

/// `t=<unix seconds>` and hex HMAC-SHA256 `v1` signatures of `"{t}.{body}"`.
const SIGNATURE: SignatureList<'static> = SignatureList {
    name: "Stripe-Signature",
    separator: ',',
    timestamp_key: "t",
    signature_key: "v1",
    algorithm: Algorithm::HmacSha256,
};

#[derive(Debug, Default)]
pub struct Stripe;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Stripe))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Stripe",
    docs_url: "https://docs.stripe.com/webhooks#verify-events",
    scheme: "HMAC-SHA256 (whole `whsec_` secret as text), hex, `Stripe-Signature: t=…,v1=…`",
    signed_parts: "`{t}.{body}`",
    id_source: "body `id` (`evt_…`)",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("stripe (PyPI)"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Stripe {
    fn name(&self) -> &'static str {
        "stripe"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3 * 24 * 3600
    }

    /// HMAC over `t` and the body, which holds the id and the type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let listed = SIGNATURE.read(request.headers)?;
        // Of several `t` items, the last one is the one checked.
        let timestamp = *listed
            .timestamps
            .last()
            .ok_or_else(|| Refusal::malformed_signature("Stripe-Signature has no `t`"))?;
        if listed.candidates.is_empty() {
            return Err(Refusal::signature(
                "Stripe-Signature has no v1 signature (v0 is not trusted)",
            ));
        }
        Ok(SignatureClaim {
            timestamp: Some(timestamp),
            message: SignedMessage::new()
                .owned(format!("{timestamp}."))
                .borrowed(request.body),
            candidates: listed.candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(
            request.body,
            &["/id", "/type", "/data/object/id", "/created"],
        )?;
        let event = body
            .required_id_at("/id")?
            .event_type(body.string_at("/type"))
            .object_id(body.string_at("/data/object/id"))
            .created_at(body.integer_at("/created"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let timestamp = outgoing.now;
        let mac = crate::signature::hmac_sha256(
            secret,
            &[format!("{timestamp}.").as_bytes(), outgoing.body],
        );
        Ok(crate::signer::SignedRequest::json(outgoing.body).header(
            SIGNATURE.name,
            format!("t={timestamp},v1={}", hex::encode(mac)),
        ))
    }
}
