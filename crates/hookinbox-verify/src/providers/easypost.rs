//! `easypost` — EasyPost webhook signatures (`X-Hmac-Signature`).
//!
//! Follows EasyPost's "Webhooks guide" (docs.easypost.com/guides/webhooks-guide,
//! "HMAC validation") and `easypost.util.validate_webhook` of the official
//! Python SDK (`easypost` on PyPI).
//!
//! - Header: `X-Hmac-Signature: hmac-sha256-hex=<hex>`; the prefix is required.
//! - Signed bytes: the raw body only, HMAC-SHA256 keyed with the webhook's
//!   `webhook_secret`, NFKD-normalised then UTF-8 encoded, as the SDKs do.
//!   The normalisation is done when the key is parsed, so a secret is
//!   configured exactly as it was given to EasyPost.
//! - Tolerance: none. EasyPost signs no timestamp.
//! - Event id: body `id` (`evt_…`), signed. A retried event is the same
//!   Event object, so the id is stable across retries.
//! - Type: `description` (`tracker.updated`). Object id: `result.id`.
//!   Created: `created_at` (RFC 3339). No object version.
//! - Redelivery window: the guide followed here states no retry span; 3
//!   days are kept, an assumption to revisit when EasyPost documents one.

use unicode_normalization::UnicodeNormalization;

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, VectorSource,
};

/// `hmac-sha256-hex=` and the hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Hmac-Signature", Algorithm::HmacSha256)
        .with_prefix("hmac-sha256-hex=")
        .with_length(32);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "EasyPost",
    docs_url: "https://docs.easypost.com/guides/webhooks-guide",
    scheme: "HMAC-SHA256, hex, `X-Hmac-Signature: hmac-sha256-hex=` (secret NFKD-normalised)",
    signed_parts: "raw body",
    id_source: "body `id` (signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("easypost (PyPI)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct EasyPost;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(EasyPost))
}

impl Adapter for EasyPost {
    fn name(&self) -> &'static str {
        "easypost"
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

    /// HMAC over the body, which holds the id and the description.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(&normalised(secret.trim()))
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let event = envelope::required_id_at(&body, "/id")?
            .event_type(envelope::string_at(&body, "/description"))
            .object_id(envelope::string_at(&body, "/result/id"))
            .created_at(envelope::rfc3339_at(&body, "/created_at"));
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

/// The secret as EasyPost's SDKs key the MAC with it: NFKD-normalised.
fn normalised(secret: &str) -> String {
    secret.nfkd().collect()
}

/// Signs a body the way EasyPost does and returns the whole header value
/// (`hmac-sha256-hex=<hex>`). Used by tests and load generators.
pub fn sign(webhook_secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(normalised(webhook_secret).as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "ep-webhook-secret";
    const BODY: &[u8] = br#"{"object":"Event","id":"evt_1","description":"tracker.updated","created_at":"2023-11-14T22:13:20Z","result":{"id":"trk_1","object":"Tracker"}}"#;

    fn verify_with(secret: &str, header: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(EasyPost), secret);
        let headers: Headers = [("X-Hmac-Signature", header)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify_with(SECRET, &sign(SECRET, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "evt_1");
        assert_eq!(event.event_type.as_deref(), Some("tracker.updated"));
        assert_eq!(event.object_id.as_deref(), Some("trk_1"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn a_composed_secret_keys_the_mac_decomposed() {
        // "é" as one code point is configured; EasyPost keys with "e" + U+0301.
        let composed = "s\u{e9}cret";
        let mac = SIGNATURE.sign_hmac("se\u{301}cret".as_bytes(), &[BODY]);
        assert!(verify_with(composed, &mac, BODY).is_ok());
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[20] ^= 1;
        assert_eq!(
            verify_with(SECRET, &good, &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_with(SECRET, &sign("other", BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_with(SECRET, &good["hmac-sha256-hex=".len()..], BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify_with(SECRET, "", BODY).unwrap_err(),
            Reason::MissingSignature
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
                Box::new(EasyPost), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, index, flip)?;
        }
    }
}
