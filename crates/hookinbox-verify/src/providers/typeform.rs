//! `typeform` — Typeform webhook signatures.
//!
//! Follows Typeform's "Secure your webhooks" and "Webhooks API" pages
//! (typeform.com/developers/webhooks).
//!
//! - Header: `Typeform-Signature: sha256=<base64>`; the `sha256=` prefix is
//!   required (any other prefix is a malformed signature).
//! - Signed bytes: the raw body, HMAC-SHA256 keyed with the webhook's secret
//!   as UTF-8 bytes, standard base64.
//! - Tolerance: none. Typeform signs no timestamp.
//! - Event id: body `event_id` (signed), documented as the webhook's unique
//!   id, assigned by Typeform. Retries resend the webhook; Typeform's docs do
//!   not say in so many words that the id is kept, and nothing else in the
//!   payload identifies one event (`form_response.token` is shared by the
//!   partial responses of one submission).
//! - Type: `event_type` (`form_response`, `form_response_partial`). Object id:
//!   the response's `form_response.token`. Created:
//!   `form_response.submitted_at` (RFC 3339). No object version.
//! - Redelivery window: 429/408/503/423 answers are retried every 2–3 minutes
//!   for 10 hours; other failures five times over about 3.5 hours. 10 hours.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// `sha256=` and the standard base64 of the HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("Typeform-Signature", Algorithm::HmacSha256).with_prefix("sha256=");

#[derive(Debug, Default)]
pub struct Typeform;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Typeform))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Typeform",
    docs_url: "https://www.typeform.com/developers/webhooks/secure-your-webhooks/",
    scheme: "HMAC-SHA256, base64, `Typeform-Signature: sha256=…`",
    signed_parts: "raw body",
    id_source: "body `event_id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Typeform {
    fn name(&self) -> &'static str {
        "typeform"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        10 * 3600
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
        let event = envelope::required_id_at(&body, "/event_id")?
            .event_type(envelope::string_at(&body, "/event_type"))
            .object_id(envelope::string_at(&body, "/form_response/token"))
            .created_at(envelope::rfc3339_at(&body, "/form_response/submitted_at"));
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

/// Signs a body the way Typeform does and returns the whole header value
/// (`sha256=<base64>`). Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "tf-secret";
    const BODY: &[u8] = br#"{"event_id":"01HTEST","event_type":"form_response","form_response":{"form_id":"f1","token":"tok-1","submitted_at":"2023-11-14T22:13:20Z"}}"#;

    fn verify(signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Typeform), SECRET);
        let headers: Headers = [("Typeform-Signature", signature)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "01HTEST");
        assert_eq!(event.event_type.as_deref(), Some("form_response"));
        assert_eq!(event.object_id.as_deref(), Some("tok-1"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[20] ^= 1;
        assert_eq!(verify(&good, &tampered).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(&sign("other", BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        let bare = good.trim_start_matches("sha256=");
        assert_eq!(verify(bare, BODY).unwrap_err(), Reason::MalformedSignature);
        assert_eq!(
            verify(&format!("sha1={bare}"), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify("sha256=!!!", BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let body = br#"{"event_type":"form_response"}"#;
        assert_eq!(
            verify(&sign(SECRET, body), body).unwrap_err(),
            Reason::MissingEventId
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
                Box::new(Typeform), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
