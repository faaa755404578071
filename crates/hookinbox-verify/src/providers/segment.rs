//! `segment` — Segment Webhooks destination signatures (`X-Signature`).
//!
//! Follows Segment's "Webhooks (Actions) Destination" and "Webhooks
//! (Classic)" pages (segment.com/docs/connections/destinations/catalog/actions-webhook):
//! with a shared secret set, Segment signs each request with an HMAC in the
//! `X-Signature` header, "a hex-encoded SHA1 hash generated using the shared
//! secret and the request body".
//!
//! - Header: `X-Signature` = hex HMAC-SHA1 of the raw body, keyed with the
//!   destination's shared secret as UTF-8 bytes.
//! - Signed bytes: the raw body only. **Batching must be off**: Twilio's
//!   support notes that with batching Segment signs only the *first* event
//!   of the batch, not the request body, so a batched request cannot be
//!   verified as a whole and is refused (`signature`).
//! - Tolerance: none. Segment signs no timestamp.
//! - Event id: body `messageId` (signed), which Segment keeps for a message
//!   across its retries. Type: `type` (`track`, `identify`, …). Created:
//!   `timestamp` (RFC 3339). No object id or version is claimed.
//! - Redelivery window: Segment retries failed or timed-out deliveries later;
//!   the pages we follow give no window. One day is kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};

/// Hex HMAC-SHA1 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Signature", Algorithm::HmacSha1);

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Segment",
    docs_url: "https://segment.com/docs/connections/destinations/catalog/actions-webhook/",
    scheme: "HMAC-SHA1, hex, `X-Signature`",
    signed_parts: "raw body",
    id_source: "body `messageId`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Segment;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Segment))
}

impl Adapter for Segment {
    fn name(&self) -> &'static str {
        "segment"
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

    /// HMAC over the body, which holds the message id and type.
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
        let id = envelope::string_at(&body, "/messageId").ok_or_else(|| {
            Refusal::missing_event_id("no message id at `/messageId` in the body")
        })?;
        let event = Envelope::with_id(id)?
            .event_type(envelope::string_at(&body, "/type"))
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

/// Signs a body the way Segment does. Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "segment-shared-secret";
    const BODY: &[u8] = br#"{"version":1,"type":"track","event":"Signed Up","messageId":"ajs-next-1700000000000-4b0a","userId":"019mr8mf4r","properties":{"plan":"Pro"},"timestamp":"2023-11-14T22:13:20.000Z"}"#;
    const OTHER_HEADERS: &[(&str, &str)] = &[];

    fn verify_with(
        signature: Option<&str>,
        others: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Segment), SECRET);
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
        assert_eq!(event.event_id, "ajs-next-1700000000000-4b0a");
        assert_eq!(event.event_type.as_deref(), Some("track"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[20] ^= 1;
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
        let no_id = br#"{"type":"track"}"#;
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
                Box::new(Segment), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
