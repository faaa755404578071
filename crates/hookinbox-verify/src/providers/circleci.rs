//! `circleci` — CircleCI outbound webhooks (`workflow-completed`,
//! `job-completed`).
//!
//! Follows CircleCI's "Webhooks" pages (communication protocol, "Secret
//! token") and CircleCI staff's statement that only the `v1` signature is
//! provided: HMAC-SHA256 of the request body keyed with the signing secret.
//!
//! - Header: `circleci-signature` = comma-separated `<version>=<hex>` entries;
//!   each `v1=` entry is a candidate, other versions are ignored (kept for
//!   schemes CircleCI may add). No `v1=` entry: `malformed_signature`.
//! - Signed bytes: the raw body only, secret as UTF-8. Tolerance: none; the
//!   body's `happened_at` is signed but CircleCI retries with the same body
//!   later, so it is metadata, not a freshness check.
//! - Event id: body `id`, the event's id, the same on every retry. Signed.
//!   Not JSON: `malformed_body`; no `id`: `missing_event_id`.
//! - Type: body `type`. Created: `happened_at` (RFC 3339). No object id or
//!   version.
//! - Redelivery window: CircleCI retries later with an undocumented policy; 24
//!   hours is kept.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

/// The signature header: HMAC-SHA256, hex, `circleci-signature: v1=…` (comma-separated versions).
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("circleci-signature", Algorithm::HmacSha256).with_prefix("v1=");

#[derive(Debug, Default)]
pub struct CircleCi;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(CircleCi))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "CircleCI (outbound webhooks)",
    docs_url: "https://circleci.com/docs/webhooks/",
    scheme: "HMAC-SHA256, hex, `circleci-signature: v1=…` (comma-separated versions)",
    signed_parts: "raw body",
    id_source: "body `id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for CircleCi {
    fn name(&self) -> &'static str {
        "circleci"
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
        let value = SIGNATURE.value(request.headers)?;
        let candidates = value
            .split(',')
            .map(str::trim)
            .filter(|entry| entry.starts_with("v1="))
            .map(|entry| SIGNATURE.decode(entry))
            .collect::<Result<Vec<_>, _>>()?;
        if candidates.is_empty() {
            return Err(Refusal::malformed_signature(
                "circleci-signature has no v1= entry",
            ));
        }
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new().borrowed(request.body),
            candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let id = envelope::string_at(&body, "/id")
            .ok_or_else(|| Refusal::missing_event_id("the body has no id"))?;
        let event = Envelope::with_id(&id)?
            .event_type(envelope::string_at(&body, "/type"))
            .created_at(envelope::rfc3339_at(&body, "/happened_at"));
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

/// Signs a body the way CircleCI (outbound webhooks) does (hex HMAC-SHA256 of the raw body, with
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

    const SECRET: &str = "circleci-test-secret";
    const BODY: &[u8] =
        br#"{"id":"evt-1","type":"workflow-completed","happened_at":"2023-11-14T22:13:20Z"}"#;
    const OTHERS: &[(&str, &str)] = &[];

    fn verify(signature: &str, others: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let mut headers: Headers = others.iter().copied().collect();
        headers.append("circleci-signature", signature);
        let verifier = test_support::verifier(Box::new(CircleCi), SECRET);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), OTHERS, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "evt-1");
        assert_eq!(event.event_type.as_deref(), Some("workflow-completed"));
        assert_eq!(CircleCi.default_tolerance_seconds(), None);
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
                &test_support::verifier(Box::new(CircleCi), SECRET),
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

    #[test]
    fn any_v1_entry_may_match_and_other_versions_are_ignored() {
        let good = sign(SECRET, BODY);
        let other = sign("other", BODY);
        let header = format!("v2=abcd,{other}, {good}");
        assert!(verify(&header, OTHERS, BODY).is_ok());
        assert_eq!(
            verify("v2=abcd", OTHERS, BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify("v1=zz", OTHERS, BODY).unwrap_err(),
            Reason::MalformedSignature
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
            let signed = Signed::in_header(Box::new(CircleCi), &secret, SIGNATURE, &sign(&secret, &body), OTHERS);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
