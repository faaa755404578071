//! `helpscout` — Help Scout webhook signatures (`X-HelpScout-Signature`).
//!
//! Follows Help Scout's "Webhooks" page (developer.helpscout.com/webhooks):
//! the payload is signed with the webhook's secret key, HMAC-SHA1, base64.
//!
//! - Header: `X-HelpScout-Signature` = standard base64 of the HMAC-SHA1 of
//!   the raw body, keyed with the webhook's secret key as UTF-8 bytes.
//! - Signed bytes: the raw body only.
//! - Tolerance: none. Help Scout signs no timestamp.
//! - Event id: **Help Scout sends none**: the body is the resource itself (a
//!   conversation, a customer) and the event name is the unsigned
//!   `X-HelpScout-Event` header. A retry resends the same payload, so the id
//!   is the body's fingerprint: `sha256:` and the hex SHA-256 of the signed
//!   raw body.
//! - Type: the `X-HelpScout-Event` header (`convo.assigned`), not signed.
//!   Object id: body `id`. No creation time or object version is claimed.
//! - Redelivery window: failed webhooks are retried; the page we follow gives
//!   no window. Three days are kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};

/// Standard base64 of the HMAC-SHA1 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("X-HelpScout-Signature", Algorithm::HmacSha1);

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Help Scout",
    docs_url: "https://developer.helpscout.com/webhooks/",
    scheme: "HMAC-SHA1, base64, `X-HelpScout-Signature`",
    signed_parts: "raw body",
    id_source: "body fingerprint (SHA-256 of the signed body)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Helpscout;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Helpscout))
}

impl Adapter for Helpscout {
    fn name(&self) -> &'static str {
        "helpscout"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3 * 24 * 3600
    }

    /// HMAC over the body, whose fingerprint is the id; the type is the unsigned
    /// `X-HelpScout-Event` header.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: true,
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
        let body = envelope::json(request.body)?;
        if !body.is_object() {
            return Err(Refusal::malformed_body("the body is not a JSON object"));
        }
        let event = Envelope::with_id(body_fingerprint(request.body))?
            .event_type(
                request
                    .headers
                    .get_nonempty("x-helpscout-event")
                    .map(str::to_owned),
            )
            .object_id(envelope::string_at(&body, "/id"));
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

/// The id of an event Help Scout gives no id: `sha256:` and the hex SHA-256
/// of the signed body.
fn body_fingerprint(body: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(body)))
}

/// Signs a body the way Help Scout does. Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "helpscout-secret-key";
    const BODY: &[u8] =
        br#"{"id":12345,"number":42,"type":"email","status":"active","subject":"Help"}"#;
    const OTHER_HEADERS: &[(&str, &str)] = &[("X-HelpScout-Event", "convo.assigned")];

    fn verify_with(
        signature: Option<&str>,
        others: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Helpscout), SECRET);
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
        assert_eq!(event.event_id, body_fingerprint(BODY));
        assert_eq!(event.event_type.as_deref(), Some("convo.assigned"));
        assert_eq!(event.object_id.as_deref(), Some("12345"));
        assert!(verified.unsigned_metadata().event_type);
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
            verify(Some("!!"), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let not_an_object = br#"[]"#;
        assert_eq!(
            verify_with(
                Some(&sign(SECRET, not_an_object)),
                OTHER_HEADERS,
                not_an_object
            )
            .unwrap_err(),
            Reason::MalformedBody
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
                Box::new(Helpscout), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
