//! `vercel` — Vercel webhooks (account and integration webhooks).
//!
//! Follows Vercel's webhooks documentation ("Securing webhooks"): the
//! `x-vercel-signature` header is the hex HMAC-SHA1 of the raw body, keyed
//! with the webhook's secret (an integration's client secret for integration
//! webhooks).
//!
//! - Header: `x-vercel-signature` = hex HMAC-SHA1 of the raw body, secret as
//!   UTF-8 bytes.
//! - Signed bytes: the raw body only. Tolerance: none, no timestamp is signed.
//! - Event id: body `id` (signed), the event's id. A body that is not JSON:
//!   `malformed_body`; without `id`: `missing_event_id`.
//! - Type: body `type` (`deployment.created`). Created: `createdAt` (unix
//!   milliseconds). No object id or version.
//! - Redelivery window: Vercel documents retries but no window; 24 hours is
//!   kept.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// The signature header: HMAC-SHA1, hex, `x-vercel-signature`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("x-vercel-signature", Algorithm::HmacSha1);

#[derive(Debug, Default)]
pub struct Vercel;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Vercel))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Vercel",
    docs_url: "https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks",
    scheme: "HMAC-SHA1, hex, `x-vercel-signature`",
    signed_parts: "raw body",
    id_source: "body `id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Vercel {
    fn name(&self) -> &'static str {
        "vercel"
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

    /// HMAC over the body; the id and type are read from it.
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
        let id = envelope::string_at(&body, "/id")
            .ok_or_else(|| Refusal::missing_event_id("the body has no id"))?;
        let created_ms = body.get("createdAt").and_then(serde_json::Value::as_i64);
        let event = Envelope::with_id(&id)?
            .event_type(envelope::string_at(&body, "/type"))
            .created_at(created_ms.map(|ms| ms.div_euclid(1000)));
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

/// Signs a body the way Vercel does (hex HMAC-SHA1 of the raw body, with
/// the header's prefix). Used by tests.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "vercel-test-secret";
    const BODY: &[u8] =
        br#"{"id":"evt_1","type":"deployment.created","createdAt":1700000000000,"payload":{}}"#;
    const OTHERS: &[(&str, &str)] = &[];

    fn verify(signature: &str, others: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let mut headers: Headers = others.iter().copied().collect();
        headers.append("x-vercel-signature", signature);
        let verifier = test_support::verifier(Box::new(Vercel), SECRET);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), OTHERS, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "evt_1");
        assert_eq!(event.event_type.as_deref(), Some("deployment.created"));
        // No timestamp is signed, so no freshness check applies.
        assert!(test_support::verify(
            &test_support::verifier(Box::new(Vercel), SECRET),
            &{
                let mut h: Headers = OTHERS.iter().copied().collect();
                h.append("x-vercel-signature", sign(SECRET, BODY));
                h
            },
            BODY,
            i64::MAX,
        )
        .is_ok());
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[3] ^= 1;
        assert_eq!(
            verify(&good, OTHERS, &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&sign("other", BODY), OTHERS, BODY).unwrap_err(),
            Reason::Signature
        );
        let unsigned: Headers = OTHERS.iter().copied().collect();
        assert_eq!(
            test_support::verify(
                &test_support::verifier(Box::new(Vercel), SECRET),
                &unsigned,
                BODY,
                0
            )
            .unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify("%%%", OTHERS, BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_id = br#"{"type":"x"}"#;
        assert_eq!(
            verify(&sign(SECRET, no_id), &[], no_id).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(&sign(SECRET, b"not json"), &[], b"not json").unwrap_err(),
            Reason::MalformedBody
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            text in any::<String>(),
            secret in "[A-Za-z0-9_]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "id": "evt_1", "text": text, "webhook_metadata": {"event": {"id": "ev-1"}}
            }))
            .unwrap();
            let signed = Signed::in_header(Box::new(Vercel), &secret, SIGNATURE, &sign(&secret, &body), OTHERS);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
