//! `checkout_com` — Checkout.com webhook signatures (`Cko-Signature`).
//!
//! Follows Checkout.com's "Set up your webhook receiver" and "Receive
//! webhooks" pages (checkout.com/docs/developer-resources/webhooks): the
//! notification is hashed with SHA-256 as an HMAC keyed with the signature key
//! of the workflow's webhook action, and sent hex-encoded.
//!
//! - Header: `Cko-Signature` = hex HMAC-SHA256 of the raw body, keyed with
//!   the webhook action's signature key as UTF-8 bytes. (The optional
//!   `Authorization` header a workflow can add is a static value and is not
//!   used: the signature is the stronger proof.)
//! - Signed bytes: the raw body only.
//! - Tolerance: none. Checkout.com signs no timestamp.
//! - Event id: body `id` (`evt_…`), signed; a resent webhook carries the
//!   same event. Type: `type` (`payment_approved`). Object id: `data.id`.
//!   Created: `created_on` (RFC 3339). No object version.
//! - Redelivery window: up to eight retries, 5 min, 10 min, 15 min, 30 min,
//!   1 h, 4 h, 12 h and 12 h after the previous attempt (about 30 hours in
//!   all); webhooks can also be resent from the Dashboard or the API. Two
//!   days are kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("Cko-Signature", Algorithm::HmacSha256);

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Checkout.com",
    docs_url: "https://www.checkout.com/docs/developer-resources/webhooks/manage-webhooks/set-up-your-webhook-receiver",
    scheme: "HMAC-SHA256, hex, `Cko-Signature`",
    signed_parts: "raw body",
    id_source: "body `id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython("crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct CheckoutCom;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(CheckoutCom))
}

impl Adapter for CheckoutCom {
    fn name(&self) -> &'static str {
        "checkout_com"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        2 * 24 * 3600
    }

    /// HMAC over the body, which holds the event's id and type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: true,
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
        let id = envelope::string_at(&body, "/id")
            .ok_or_else(|| Refusal::missing_event_id("no event id at `/id` in the body"))?;
        let event = Envelope::with_id(id)?
            .event_type(envelope::string_at(&body, "/type"))
            .object_id(envelope::string_at(&body, "/data/id"))
            .created_at(envelope::rfc3339_at(&body, "/created_on"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        crate::signer::body_hmac(&SIGNATURE, &key, outgoing)
    }
}

/// Signs a body the way Checkout.com does. Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "cko-signature-key";
    const BODY: &[u8] = br#"{"id":"evt_az5sblvku4ge3dwpztvyizgcau","type":"payment_approved","version":"1.0.33","created_on":"2023-11-14T22:13:20Z","data":{"id":"pay_mbabizu24mvu3mela5njyhpit4","amount":6540}}"#;
    const OTHER_HEADERS: &[(&str, &str)] = &[];

    fn verify_with(
        signature: Option<&str>,
        others: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(CheckoutCom), SECRET);
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
        assert_eq!(event.event_id, "evt_az5sblvku4ge3dwpztvyizgcau");
        assert_eq!(event.event_type.as_deref(), Some("payment_approved"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("pay_mbabizu24mvu3mela5njyhpit4")
        );
        assert_eq!(event.created_at, Some(1_700_000_000));
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
        let no_id = br#"{"type":"payment_approved","data":{}}"#;
        assert_eq!(
            verify_with(Some(&sign(SECRET, no_id)), OTHER_HEADERS, no_id).unwrap_err(),
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
                Box::new(CheckoutCom), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
