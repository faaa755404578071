//! `razorpay` — Razorpay webhook signatures.
//!
//! Follows Razorpay's "Validate and test webhooks" and "Best practices" pages
//! (razorpay.com/docs/webhooks) and razorpay-python's
//! `utility.verify_webhook_signature` (hex HMAC-SHA256 of the raw body with
//! the webhook secret).
//!
//! - Header: `X-Razorpay-Signature` = hex HMAC-SHA256 of the raw body, keyed
//!   with the webhook secret chosen at setup (not the API key secret) as
//!   UTF-8 bytes.
//! - Signed bytes: the raw body only.
//! - Tolerance: none. Razorpay signs no timestamp.
//! - Event id: header `x-razorpay-event-id`, which Razorpay tells receivers
//!   to de-duplicate on: a redelivery of one event repeats it. Without it:
//!   `missing_event_id`. The header is not signed and Razorpay signs no
//!   timestamp: a captured request could be replayed under a new event id.
//!   The adapter declares the id unsigned, so hookinbox takes the same body
//!   within the redelivery window as the same event; after it, only TLS
//!   prevents the capture.
//! - Type: body `event` (`payment.captured`). Object id: the entity the event
//!   names, `payload.<entity>.entity.id` with `<entity>` the part of `event`
//!   before the first dot. Created: `created_at` (unix seconds). No object
//!   version.
//! - Redelivery window: failures are retried with exponential backoff for
//!   24 hours after the event was created.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Razorpay-Signature", Algorithm::HmacSha256);

#[derive(Debug, Default)]
pub struct Razorpay;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Razorpay))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Razorpay",
    docs_url: "https://razorpay.com/docs/webhooks/validate-test/",
    scheme: "HMAC-SHA256, hex, `X-Razorpay-Signature`",
    signed_parts: "raw body",
    id_source: "header `x-razorpay-event-id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("razorpay (PyPI), verify only"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Razorpay {
    fn name(&self) -> &'static str {
        "razorpay"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// HMAC over the body, which holds the type; the id is the unsigned
    /// `x-razorpay-event-id` header.
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
            .get_nonempty("x-razorpay-event-id")
            .ok_or_else(|| Refusal::missing_event_id("no x-razorpay-event-id header"))?;
        let event_type = envelope::string_at(&body, "/event");
        let object_id = event_type
            .as_deref()
            .and_then(|event| event.split('.').next())
            .filter(|entity| !entity.is_empty() && !entity.contains(['/', '~']))
            .and_then(|entity| envelope::string_at(&body, &format!("/payload/{entity}/entity/id")));
        let event = Envelope::with_id(id)?
            .event_type(event_type)
            .object_id(object_id)
            .created_at(envelope::integer_at(&body, "/created_at"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(crate::signer::body_hmac(&SIGNATURE, &key, outgoing)?
            .header("x-razorpay-event-id", outgoing.event_id))
    }
}

/// Signs a body the way Razorpay does: hex HMAC-SHA256 of the raw body. Used
/// by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "rzp-webhook-secret";
    const BODY: &[u8] = br#"{"entity":"event","event":"payment.captured","created_at":1700000000,"payload":{"payment":{"entity":{"id":"pay_1","amount":100}}}}"#;

    fn verify(headers: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Razorpay), SECRET);
        let headers: Headers = headers.iter().copied().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let signature = sign(SECRET, BODY);
        let verified = verify(
            &[
                ("X-Razorpay-Signature", &signature),
                ("x-razorpay-event-id", "evt_1"),
            ],
            BODY,
        )
        .unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "evt_1");
        assert_eq!(event.event_type.as_deref(), Some("payment.captured"));
        assert_eq!(event.object_id.as_deref(), Some("pay_1"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let id = ("x-razorpay-event-id", "evt_1");
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify(&[("X-Razorpay-Signature", &good), id], &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&[("X-Razorpay-Signature", &sign("other", BODY)), id], BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(&[id], BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(&[("X-Razorpay-Signature", "0xdead"), id], BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify(&[("X-Razorpay-Signature", &good)], BODY).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(&[("X-Razorpay-Signature", &sign(SECRET, b"[")), id], b"[").unwrap_err(),
            Reason::MalformedBody
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in proptest::collection::vec(any::<u8>(), 1..256),
            secret in "[A-Za-z0-9_]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = Signed::in_header(
                Box::new(Razorpay), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
