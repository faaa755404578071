//! `bitbucket` — Bitbucket Cloud webhooks with a secret.
//!
//! Follows Atlassian's "Manage webhooks" page for Bitbucket Cloud (secured
//! webhooks): each request is signed with an HMAC of the body.
//!
//! - Header: `X-Hub-Signature: sha256=<hex>`, HMAC-SHA256 of the raw body keyed
//!   with the webhook's secret as UTF-8 bytes. A webhook without a secret sends
//!   no signature and is refused (`missing_signature`).
//! - Signed bytes: the raw body only. Tolerance: none, no timestamp is signed.
//! - Event id: header `X-Request-UUID`, unique per request and not signed; the
//!   adapter declares it unsigned, so the same body inside the window is the
//!   same event. Without it: `missing_event_id`.
//! - Type: header `X-Event-Key` (`repo:push`), unsigned. No object id or
//!   version (payloads differ per event).
//! - Redelivery window: Bitbucket retries a failed delivery a few times within
//!   minutes and documents no longer window; 24 hours is kept.

use crate::envelope::Envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// The signature header: HMAC-SHA256, hex, `X-Hub-Signature: sha256=…`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Hub-Signature", Algorithm::HmacSha256).with_prefix("sha256=");

#[derive(Debug, Default)]
pub struct Bitbucket;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Bitbucket))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Bitbucket Cloud",
    docs_url: "https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/",
    scheme: "HMAC-SHA256, hex, `X-Hub-Signature: sha256=…`",
    signed_parts: "raw body",
    id_source: "header `X-Request-UUID`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Bitbucket {
    fn name(&self) -> &'static str {
        "bitbucket"
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

    /// HMAC over the body only: the id and the type are unsigned headers.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: false,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let headers = request.headers;
        let id = headers
            .get_nonempty("x-request-uuid")
            .ok_or_else(|| Refusal::missing_event_id("no X-Request-UUID header"))?;
        let event = Envelope::with_id(id)?
            .event_type(headers.get_nonempty("x-event-key").map(str::to_owned));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(crate::signer::body_hmac(&SIGNATURE, &key, outgoing)?
            .header("X-Request-UUID", outgoing.event_id))
    }
}

/// Signs a body the way Bitbucket Cloud does (hex HMAC-SHA256 of the raw body, with
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

    const SECRET: &str = "bitbucket-test-secret";
    const BODY: &[u8] = br#"{"push":{"changes":[]}}"#;
    const OTHERS: &[(&str, &str)] = &[("X-Request-UUID", "u-1"), ("X-Event-Key", "repo:push")];

    fn verify(signature: &str, others: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let mut headers: Headers = others.iter().copied().collect();
        headers.append("X-Hub-Signature", signature);
        let verifier = test_support::verifier(Box::new(Bitbucket), SECRET);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), OTHERS, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "u-1");
        assert_eq!(event.event_type.as_deref(), Some("repo:push"));
        // No timestamp is signed, so no freshness check applies.
        assert!(test_support::verify(
            &test_support::verifier(Box::new(Bitbucket), SECRET),
            &{
                let mut h: Headers = OTHERS.iter().copied().collect();
                h.append("X-Hub-Signature", sign(SECRET, BODY));
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
                &test_support::verifier(Box::new(Bitbucket), SECRET),
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
        let without_id: Vec<(&str, &str)> = OTHERS
            .iter()
            .copied()
            .filter(|(n, _)| *n != "X-Request-UUID")
            .collect();
        assert_eq!(
            verify(&good, &without_id, BODY).unwrap_err(),
            Reason::MissingEventId
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
            let signed = Signed::in_header(Box::new(Bitbucket), &secret, SIGNATURE, &sign(&secret, &body), OTHERS);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
