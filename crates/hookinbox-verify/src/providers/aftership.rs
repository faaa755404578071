//! `aftership` — AfterShip Tracking webhook signatures (`aftership-hmac-sha256`).
//!
//! Follows AfterShip's "Webhook Signature" and "Webhook Specifications"
//! pages (aftership.com/docs/tracking/webhook/webhook-signature).
//!
//! - Header: `aftership-hmac-sha256` = standard base64 of the MAC. (AfterShip
//!   Returns and Shipping send other header names; they are not this adapter.)
//! - Signed bytes: the raw body only, HMAC-SHA256 keyed with the account's
//!   webhook secret (Settings → Webhooks) as UTF-8 bytes.
//! - Tolerance: none. AfterShip signs no timestamp (`ts` in the body is the
//!   event's time, not the delivery's).
//! - Event id: body `event_id`, a UUID AfterShip documents as uniquely
//!   identifying the webhook event; signed.
//! - Type: `event` (`tracking_update`, `edd_revise`, …). Object id:
//!   `msg.id` (the tracking). Created: `ts` (unix seconds). No object
//!   version.
//! - Redelivery window: the pages followed here state no retry span; 3 days
//!   are kept, an assumption to revisit when AfterShip documents one.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, VectorSource,
};

/// Standard base64 of the HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("aftership-hmac-sha256", Algorithm::HmacSha256).with_length(32);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "AfterShip",
    docs_url: "https://www.aftership.com/docs/tracking/webhook/webhook-signature",
    scheme: "HMAC-SHA256, base64, `aftership-hmac-sha256`",
    signed_parts: "raw body",
    id_source: "body `event_id` (signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/saas_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct AfterShip;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(AfterShip))
}

impl Adapter for AfterShip {
    fn name(&self) -> &'static str {
        "aftership"
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

    /// HMAC over the body, which holds the id and the event code.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let event = envelope::required_id_at(&body, "/event_id")?
            .event_type(envelope::string_at(&body, "/event"))
            .object_id(envelope::string_at(&body, "/msg/id"))
            .created_at(envelope::integer_at(&body, "/ts"));
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

/// Signs a body the way AfterShip does: base64 HMAC-SHA256 of the raw body.
/// Used by tests and load generators.
pub fn sign(webhook_secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(webhook_secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "as-webhook-secret";
    const BODY: &[u8] = br#"{"event":"tracking_update","event_id":"9b1c-1","is_tracking_first_tag":false,"msg":{"id":"trk-1","tag":"InTransit"},"ts":1700000000}"#;

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(AfterShip), SECRET);
        let headers: Headers = [("aftership-hmac-sha256", header)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "9b1c-1");
        assert_eq!(event.event_type.as_deref(), Some("tracking_update"));
        assert_eq!(event.object_id.as_deref(), Some("trk-1"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[12] ^= 1;
        assert_eq!(verify(&good, &tampered).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(&sign("other", BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify("abc", BODY).unwrap_err(), Reason::MalformedSignature);
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        let no_id = br#"{"event":"tracking_update"}"#;
        assert_eq!(
            verify(&sign(SECRET, no_id), no_id).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_signed_body_verifies_and_any_flipped_byte_does_not(
            secret in "[!-~]{1,64}",
            body in proptest::collection::vec(any::<u8>(), 0..256),
            index in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = Signed::in_header(
                Box::new(AfterShip), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, index, flip)?;
        }
    }
}
