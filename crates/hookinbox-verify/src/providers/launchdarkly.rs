//! `launchdarkly` — LaunchDarkly webhooks with a signing secret.
//!
//! Follows LaunchDarkly's "Webhooks" page ("Signing webhooks"): with a secret,
//! the POST carries `X-LD-Signature`, the hex HMAC-SHA256 digest of the payload
//! keyed with the secret.
//!
//! - Header: `X-LD-Signature` = hex HMAC-SHA256 of the raw body, secret as
//!   UTF-8 bytes. A webhook without a secret is unsigned and refused
//!   (`missing_signature`).
//! - Signed bytes: the raw body only. Tolerance: none, no timestamp is signed.
//! - Event id: body `_id`, the id of the change-history entry the payload is
//!   (the payload has the change-history entry format). Signed. A retry resends
//!   the same entry. Not JSON: `malformed_body`; no `_id`: `missing_event_id`.
//! - Type: body `kind` (`flag`). Created: `date` (unix milliseconds). No
//!   object id or version.
//! - Redelivery window: LaunchDarkly retries a failed delivery once; 24 hours
//!   is kept.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// The signature header: HMAC-SHA256, hex, `X-LD-Signature`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-LD-Signature", Algorithm::HmacSha256);

#[derive(Debug, Default)]
pub struct LaunchDarkly;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(LaunchDarkly))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "LaunchDarkly",
    docs_url: "https://launchdarkly.com/docs/home/infrastructure/webhooks",
    scheme: "HMAC-SHA256, hex, `X-LD-Signature`",
    signed_parts: "raw body",
    id_source: "body `_id` (the change-history entry)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for LaunchDarkly {
    fn name(&self) -> &'static str {
        "launchdarkly"
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
        let id = envelope::string_at(&body, "/_id")
            .ok_or_else(|| Refusal::missing_event_id("the body has no _id"))?;
        let date_ms = body.get("date").and_then(serde_json::Value::as_i64);
        let event = Envelope::with_id(&id)?
            .event_type(envelope::string_at(&body, "/kind"))
            .created_at(date_ms.map(|ms| ms.div_euclid(1000)));
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

/// Signs a body the way LaunchDarkly does (hex HMAC-SHA256 of the raw body, with
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

    const SECRET: &str = "launchdarkly-test-secret";
    const BODY: &[u8] = br#"{"_id":"entry-1","kind":"flag","date":1700000000000,"name":"f"}"#;
    const OTHERS: &[(&str, &str)] = &[];

    fn verify(signature: &str, others: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let mut headers: Headers = others.iter().copied().collect();
        headers.append("X-LD-Signature", signature);
        let verifier = test_support::verifier(Box::new(LaunchDarkly), SECRET);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), OTHERS, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "entry-1");
        assert_eq!(event.event_type.as_deref(), Some("flag"));
        assert_eq!(LaunchDarkly.default_tolerance_seconds(), None);
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
                &test_support::verifier(Box::new(LaunchDarkly), SECRET),
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
                "id": "evt_1", "_id": "e-1", "text": text
            }))
            .unwrap();
            let signed = Signed::in_header(Box::new(LaunchDarkly), &secret, SIGNATURE, &sign(&secret, &body), OTHERS);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
