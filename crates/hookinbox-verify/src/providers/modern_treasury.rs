//! `modern_treasury` — Modern Treasury webhook signatures (`X-Signature`).
//!
//! Follows Modern Treasury's "Verify a webhook event" and "Webhooks" reference
//! pages (docs.moderntreasury.com/platform/docs/verifying-webhooks).
//!
//! - Header: `X-Signature` = hex HMAC-SHA256 of the raw body, keyed with the
//!   organisation's webhook key (Developer Settings) as UTF-8 bytes.
//! - Signed bytes: the raw body only.
//! - Tolerance: none. Modern Treasury signs no timestamp.
//! - Event id: header `X-Webhook-ID`, which Modern Treasury documents as
//!   "the same for every delivery attempt" of one webhook. It is not signed
//!   and no timestamp is: a captured request could be replayed under a new
//!   id, so the adapter declares the id unsigned and hookinbox takes the same
//!   body within the redelivery window as the same event. Without it:
//!   `missing_event_id`.
//! - Type: `"{data.object}.{event}"` from the signed body
//!   (`payment_order.completed`), else `event` alone. Object id: `data.id`.
//!   No creation time or object version is claimed.
//! - Redelivery window: failed deliveries are re-enqueued with exponential
//!   backoff; Modern Treasury does not publish how long. Three days are kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Signature", Algorithm::HmacSha256);

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Modern Treasury",
    docs_url: "https://docs.moderntreasury.com/platform/docs/verifying-webhooks",
    scheme: "HMAC-SHA256, hex, `X-Signature`",
    signed_parts: "raw body",
    id_source: "header `X-Webhook-ID` (unsigned)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct ModernTreasury;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(ModernTreasury))
}

impl Adapter for ModernTreasury {
    fn name(&self) -> &'static str {
        "modern_treasury"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3 * 24 * 3600
    }

    /// HMAC over the body, which holds the type; the id is the unsigned
    /// `X-Webhook-ID` header.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: false,
            event_type: true,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let id = request
            .headers
            .get_nonempty("x-webhook-id")
            .ok_or_else(|| Refusal::missing_event_id("no X-Webhook-ID header"))?;
        let action = envelope::string_at(&body, "/event");
        let event_type = match (envelope::string_at(&body, "/data/object"), action) {
            (Some(object), Some(action)) => Some(format!("{object}.{action}")),
            (_, action) => action,
        };
        let event = Envelope::with_id(id)?
            .event_type(event_type)
            .object_id(envelope::string_at(&body, "/data/id"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(crate::signer::body_hmac(&SIGNATURE, &key, outgoing)?
            .header("X-Webhook-ID", outgoing.event_id))
    }
}

/// Signs a body the way Modern Treasury does. Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "mt-webhook-key";
    const BODY: &[u8] = br#"{"event":"completed","data":{"id":"0f8e3719-3dfd-4613-9bbf-c0333781b59f","object":"payment_order","amount":1000}}"#;
    const OTHER_HEADERS: &[(&str, &str)] =
        &[("X-Webhook-ID", "wh-7f3c"), ("X-Topic", "payment_order")];

    fn verify_with(
        signature: Option<&str>,
        others: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(ModernTreasury), SECRET);
        let mut headers: Headers = others.iter().copied().collect();
        if let Some(signature) = signature {
            headers.append(SIGNATURE.name, signature);
        }
        test_support::verify(&verifier, &headers, body, 0)
    }

    fn verify(signature: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        verify_with(signature, OTHER_HEADERS, body)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(&sign(SECRET, BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "wh-7f3c");
        assert_eq!(event.event_type.as_deref(), Some("payment_order.completed"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("0f8e3719-3dfd-4613-9bbf-c0333781b59f")
        );
        assert!(verified.unsigned_metadata().event_id);
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[10] ^= 1;
        assert_eq!(
            verify(Some(&good), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(Some(&sign("other", BODY)), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(Some("not-hex"), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_id = br#"{"event":"completed","data":{}}"#;
        assert_eq!(
            verify_with(Some(&sign(SECRET, no_id)), &[], no_id).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in prop::collection::vec(any::<u8>(), 1..256),
            secret in "[A-Za-z0-9_-]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = Signed::in_header(
                Box::new(ModernTreasury), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
