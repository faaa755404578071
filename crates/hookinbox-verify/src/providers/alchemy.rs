//! `alchemy` — Alchemy Notify webhook signatures (`X-Alchemy-Signature`).
//!
//! Follows Alchemy's "Webhooks Quickstart" (alchemy.com/docs/reference/
//! notify-api-quickstart) and its `validateAlchemySignature` sample.
//!
//! - Header: `X-Alchemy-Signature` = hex HMAC-SHA256 of the raw body, no
//!   prefix.
//! - Signed bytes: the raw body only, keyed with the webhook's signing key
//!   (shown on the webhook's page in the Notify dashboard, `whsec_…`) as
//!   UTF-8 bytes, prefix included.
//! - Tolerance: none. Alchemy signs no timestamp.
//! - Event id: body `id` (`whevt_…`), the event's id, signed.
//! - Type: `type` (`ADDRESS_ACTIVITY`, `MINED_TRANSACTION`, …). Object id:
//!   `webhookId`. Created: `createdAt` (RFC 3339). No object version.
//! - Redelivery window: the pages followed here state no retry span; 24
//!   hours are kept, an assumption to revisit when Alchemy documents one.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, VectorSource,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Alchemy-Signature", Algorithm::HmacSha256).with_length(32);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Alchemy Notify",
    docs_url: "https://www.alchemy.com/docs/reference/notify-api-quickstart",
    scheme: "HMAC-SHA256, hex, `X-Alchemy-Signature`",
    signed_parts: "raw body",
    id_source: "body `id` (signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/saas_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Alchemy;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Alchemy))
}

impl Adapter for Alchemy {
    fn name(&self) -> &'static str {
        "alchemy"
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

    /// HMAC over the body, which holds the id and the type.
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
        let event = envelope::required_id_at(&body, "/id")?
            .event_type(envelope::string_at(&body, "/type"))
            .object_id(envelope::string_at(&body, "/webhookId"))
            .created_at(envelope::rfc3339_at(&body, "/createdAt"));
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

/// Signs a body the way Alchemy does: hex HMAC-SHA256 of the raw body.
/// Used by tests and load generators.
pub fn sign(signing_key: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(signing_key.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "whsec_alchemy-test";
    const BODY: &[u8] = br#"{"webhookId":"wh_1","id":"whevt_1","createdAt":"2023-11-14T22:13:20.000Z","type":"ADDRESS_ACTIVITY","event":{"network":"ETH_MAINNET","activity":[]}}"#;

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Alchemy), SECRET);
        let headers: Headers = [("X-Alchemy-Signature", header)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "whevt_1");
        assert_eq!(event.event_type.as_deref(), Some("ADDRESS_ACTIVITY"));
        assert_eq!(event.object_id.as_deref(), Some("wh_1"));
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
        assert_eq!(verify("xyz", BODY).unwrap_err(), Reason::MalformedSignature);
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        let no_id = br#"{"type":"ADDRESS_ACTIVITY"}"#;
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
                Box::new(Alchemy), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, index, flip)?;
        }
    }
}
