//! `dwolla` — Dwolla webhook signatures (`X-Request-Signature-SHA-256`).
//!
//! Follows Dwolla's "Processing & Validating Webhooks" guide
//! (developers.dwolla.com/docs/balance/webhooks): each request is signed with
//! the secret given when the webhook subscription was created.
//!
//! - Header: `X-Request-Signature-SHA-256` = hex HMAC-SHA256 of the raw body,
//!   keyed with the subscription's secret as UTF-8 bytes.
//! - Signed bytes: the raw body only.
//! - Tolerance: none. Dwolla signs no timestamp.
//! - Event id: body `id`, the event's id (signed); a retry resends the same
//!   event. Type: `topic` (`customer_transfer_completed`). Object id:
//!   `resourceId`. Created: `timestamp` (RFC 3339). No object version.
//! - Redelivery window: a webhook that is not acknowledged within 10 s is
//!   retried up to 8 times over the next 72 hours; a paused subscription's
//!   webhooks can be retried by hand later through the API. 72 hours are kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Request-Signature-SHA-256", Algorithm::HmacSha256);

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Dwolla",
    docs_url: "https://developers.dwolla.com/docs/balance/webhooks/process-validate",
    scheme: "HMAC-SHA256, hex, `X-Request-Signature-SHA-256`",
    signed_parts: "raw body",
    id_source: "body `id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Dwolla;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Dwolla))
}

impl Adapter for Dwolla {
    fn name(&self) -> &'static str {
        "dwolla"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        72 * 3600
    }

    /// HMAC over the body, which holds the event's id and topic.
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
            .event_type(envelope::string_at(&body, "/topic"))
            .object_id(envelope::string_at(&body, "/resourceId"))
            .created_at(envelope::rfc3339_at(&body, "/timestamp"));
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

/// Signs a body the way Dwolla does. Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "dwolla-subscription-secret";
    const BODY: &[u8] = br#"{"id":"80d8ff7d-7e5a-4975-ade8-9e97306d6c15","resourceId":"36E9DCB2-889B-4873-8E52-0C9404EA002A","topic":"customer_created","timestamp":"2023-11-14T22:13:20.000Z"}"#;
    const OTHER_HEADERS: &[(&str, &str)] = &[];

    fn verify_with(
        signature: Option<&str>,
        others: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Dwolla), SECRET);
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
        assert_eq!(event.event_id, "80d8ff7d-7e5a-4975-ade8-9e97306d6c15");
        assert_eq!(event.event_type.as_deref(), Some("customer_created"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("36E9DCB2-889B-4873-8E52-0C9404EA002A")
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
        let no_id = br#"{"topic":"customer_created"}"#;
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
                Box::new(Dwolla), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
