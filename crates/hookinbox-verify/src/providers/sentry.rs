//! `sentry` — Sentry integration-platform webhooks (internal and public
//! integrations).
//!
//! Follows Sentry's "Webhooks" page of the integration platform: every request
//! carries `Request-ID`, `Sentry-Hook-Resource`, `Sentry-Hook-Timestamp` and
//! `Sentry-Hook-Signature`, the hex HMAC-SHA256 of the request body keyed with
//! the integration's client secret.
//!
//! - Header: `Sentry-Hook-Signature` = hex HMAC-SHA256 of the raw body (Sentry
//!   sends the JSON it signed; its sample re-serialises the parsed body, which
//!   only works because Sentry's own serialisation is compact), secret as UTF-8.
//! - Signed bytes: the raw body only. Tolerance: none. `Sentry-Hook-Timestamp`
//!   is not signed, so it is not trusted for freshness.
//! - Event id: header `Request-ID`, a UUID per request, not signed: the adapter
//!   declares it unsigned, so the same body inside the window is the same event.
//!   Without it: `missing_event_id`.
//! - Type: `{Sentry-Hook-Resource}.{action}` (`issue.created`); the resource
//!   header is unsigned. No object id or version.
//! - Redelivery window: Sentry documents no retries for these webhooks; 24
//!   hours is kept.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// The signature header: HMAC-SHA256 (the integration's client secret), hex, `Sentry-Hook-Signature`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("Sentry-Hook-Signature", Algorithm::HmacSha256);

#[derive(Debug, Default)]
pub struct Sentry;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Sentry))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Sentry (integration platform)",
    docs_url: "https://docs.sentry.io/organization/integrations/integration-platform/webhooks/",
    scheme: "HMAC-SHA256 (the integration's client secret), hex, `Sentry-Hook-Signature`",
    signed_parts: "raw body",
    id_source: "header `Request-ID`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Sentry {
    fn name(&self) -> &'static str {
        "sentry"
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
            .get_nonempty("request-id")
            .ok_or_else(|| Refusal::missing_event_id("no Request-ID header"))?;
        let action = serde_json::from_slice::<serde_json::Value>(request.body)
            .ok()
            .and_then(|body| envelope::string_at(&body, "/action"));
        let event_type = match (headers.get_nonempty("sentry-hook-resource"), action) {
            (Some(resource), Some(action)) => Some(format!("{resource}.{action}")),
            (resource, _) => resource.map(str::to_owned),
        };
        let event = Envelope::with_id(id)?.event_type(event_type);
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(crate::signer::body_hmac(&SIGNATURE, &key, outgoing)?
            .header("Request-ID", outgoing.event_id))
    }
}

/// Signs a body the way Sentry (integration platform) does (hex HMAC-SHA256 of the raw body, with
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

    const SECRET: &str = "sentry-test-secret";
    const BODY: &[u8] = br#"{"action":"created","data":{"issue":{"id":"1"}}}"#;
    const OTHERS: &[(&str, &str)] = &[("Request-ID", "r-1"), ("Sentry-Hook-Resource", "issue")];

    fn verify(signature: &str, others: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let mut headers: Headers = others.iter().copied().collect();
        headers.append("Sentry-Hook-Signature", signature);
        let verifier = test_support::verifier(Box::new(Sentry), SECRET);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), OTHERS, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "r-1");
        assert_eq!(event.event_type.as_deref(), Some("issue.created"));
        assert_eq!(Sentry.default_tolerance_seconds(), None);
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
                &test_support::verifier(Box::new(Sentry), SECRET),
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
            .filter(|(n, _)| *n != "Request-ID")
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
                "id": "evt_1", "_id": "e-1", "text": text
            }))
            .unwrap();
            let signed = Signed::in_header(Box::new(Sentry), &secret, SIGNATURE, &sign(&secret, &body), OTHERS);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
