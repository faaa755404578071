//! `paypal` — PayPal REST webhooks, verified offline with PayPal's
//! certificate (docs/architecture.md §3, "Keys fetched from the provider").
//!
//! Follows PayPal's "Integrate webhooks" guide
//! (developer.paypal.com/api/rest/webhooks/rest, "Verify the signature
//! offline"), the same check its SDKs make:
//!
//! - Headers: `PAYPAL-TRANSMISSION-ID`, `PAYPAL-TRANSMISSION-TIME` (RFC
//!   3339), `PAYPAL-TRANSMISSION-SIG` (standard base64 of the signature),
//!   `PAYPAL-CERT-URL` (where PayPal serves the X.509 certificate whose key
//!   signed it) and `PAYPAL-AUTH-ALGO` (`SHA256withRSA`, the only one PayPal
//!   uses and the only one accepted).
//! - Signed bytes: `{transmission id}|{transmission time}|{webhook id}|{crc32}`
//!   where the webhook id is the endpoint's `webhook_id` (the id PayPal shows
//!   for the listener URL, so a request sent to another webhook of any
//!   account does not verify) and `crc32` the decimal CRC-32 (IEEE) of the
//!   raw body. RSA PKCS#1 v1.5 with SHA-256.
//! - Key: none configured. The adapter names the certificate URL
//!   ([`Adapter::key_reference`]); the service fetches it from PayPal's own
//!   hosts only, checks its chain and its name, and caches it.
//! - The body is bound by a CRC-32, which is not a cryptographic hash:
//!   whoever holds one signed request could change its body and fix the
//!   CRC. So PayPal's signature proves the body only to someone who cannot
//!   read the requests PayPal sends; the catalogue says so, and an operator
//!   who wants more sets `tolerance` (a captured request then expires) or
//!   `basic_auth` (a second credential in the URL).
//! - Tolerance: none by default. PayPal retries a delivery up to 25 times
//!   over 3 days and does not document whether a retry is signed again; a
//!   tolerance could refuse its own retries. The transmission time is
//!   signed, so `tolerance` can be set.
//! - Event id: the body's `id` (`WH-…`), the same on every retry. Type:
//!   `event_type`. Object id: `resource.id`. Created: `create_time`.
//! - Redelivery window: 3 days.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, KeyReference, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, SignedMessage,
};

/// Standard base64 of the RSA signature.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("PAYPAL-TRANSMISSION-SIG", Algorithm::RsaPkcs1Sha256);
const TRANSMISSION_ID: &str = "PAYPAL-TRANSMISSION-ID";
const TRANSMISSION_TIME: &str = "PAYPAL-TRANSMISSION-TIME";
/// The header naming the certificate; the service fetches it only from PayPal's hosts.
pub const CERT_URL: &str = "PAYPAL-CERT-URL";
const AUTH_ALGO: &str = "PAYPAL-AUTH-ALGO";
/// The one algorithm PayPal signs with.
const SHA256_WITH_RSA: &str = "SHA256withRSA";

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "PayPal",
    docs_url: "https://developer.paypal.com/api/rest/webhooks/rest/",
    scheme: "RSA PKCS#1 v1.5 SHA-256 (`SHA256withRSA`) under the certificate at `PAYPAL-CERT-URL`, fetched from PayPal's hosts only; base64, `PAYPAL-TRANSMISSION-SIG`",
    signed_parts: "`{transmission id}|{transmission time}|{webhook_id}|{decimal CRC-32 of the body}` (the body is bound by a CRC only)",
    id_source: "body `id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/key_fetch_vectors.py",
    ),
    signing: crate::Signing::Asymmetric,
};

#[derive(Debug)]
pub struct PayPal {
    /// The id PayPal gave the listener URL; part of every signed string.
    webhook_id: String,
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    let webhook_id = settings
        .webhook_id
        .as_deref()
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .ok_or(SettingsError::Missing {
            provider: "paypal",
            field: "webhook_id",
        })?;
    // PayPal's schema for a webhook id: letters and digits only. Anything
    // else is a mistake (a URL, an event id) that would fail every request.
    if !webhook_id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(SettingsError::Invalid {
            field: "webhook_id",
            message: "a PayPal webhook id has letters and digits only".into(),
        });
    }
    Ok(Box::new(PayPal {
        webhook_id: webhook_id.to_owned(),
    }))
}

impl Adapter for PayPal {
    fn name(&self) -> &'static str {
        "paypal"
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

    /// The id and type are in the body, which the signed string binds
    /// through its CRC-32 (see the module doc for what that is worth).
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, _secret: &str) -> Result<Key, KeyError> {
        Err(KeyError::FetchedFromProvider)
    }

    fn fetches_keys(&self) -> bool {
        true
    }

    fn key_reference(&self, request: &Request<'_>) -> Result<Option<KeyReference>, Refusal> {
        let url = request
            .headers
            .get_nonempty(CERT_URL)
            .ok_or_else(|| Refusal::missing_signature(format!("no {CERT_URL} header")))?;
        Ok(Some(KeyReference::Certificate {
            url: url.trim().to_owned(),
        }))
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let candidate = SIGNATURE.candidate(request.headers)?;
        match request.headers.get_nonempty(AUTH_ALGO) {
            Some(SHA256_WITH_RSA) => {}
            Some(_) => {
                return Err(Refusal::malformed_signature(format!(
                    "{AUTH_ALGO} is not {SHA256_WITH_RSA}"
                )))
            }
            None => {
                return Err(Refusal::malformed_signature(format!(
                    "no {AUTH_ALGO} header"
                )))
            }
        }
        let id = request
            .headers
            .get_nonempty(TRANSMISSION_ID)
            .ok_or_else(|| Refusal::malformed_signature(format!("no {TRANSMISSION_ID} header")))?;
        let time = request
            .headers
            .get_nonempty(TRANSMISSION_TIME)
            .ok_or_else(|| Refusal::timestamp(format!("no {TRANSMISSION_TIME} header")))?;
        let signed_at = envelope::rfc3339_seconds(time)
            .ok_or_else(|| Refusal::timestamp(format!("{TRANSMISSION_TIME} is not RFC 3339")))?;
        let crc = crc32fast::hash(request.body);
        Ok(SignatureClaim {
            timestamp: Some(signed_at),
            message: SignedMessage::new().owned(format!(
                "{id}|{time}|{webhook_id}|{crc}",
                webhook_id = self.webhook_id
            )),
            candidates: vec![candidate],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let event = envelope::required_id_at(&body, "/id")?
            .event_type(envelope::string_at(&body, "/event_type"))
            .object_id(envelope::string_at(&body, "/resource/id"))
            .created_at(envelope::rfc3339_at(&body, "/create_time"));
        Ok(Outcome::Event(event))
    }
}

/// Test support: the request PayPal would send, signed with a test key.
#[cfg(test)]
pub(crate) mod testing {
    use base64::Engine;

    pub const PRIVATE_PKCS8: &[u8] =
        include_bytes!("../../tests/fixtures/keys/rsa2048_test_only.pk8");
    pub const PUBLIC_PEM: &str =
        include_str!("../../tests/fixtures/keys/rsa2048_test_only.pub.pem");

    pub fn rsa_sign(
        algorithm: &'static dyn ring::signature::RsaEncoding,
        message: &[u8],
    ) -> String {
        let pair = ring::signature::RsaKeyPair::from_pkcs8(PRIVATE_PKCS8).unwrap();
        let mut signature = vec![0; pair.public().modulus_len()];
        pair.sign(
            algorithm,
            &ring::rand::SystemRandom::new(),
            message,
            &mut signature,
        )
        .unwrap();
        base64::engine::general_purpose::STANDARD.encode(signature)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{rsa_sign, PUBLIC_PEM};
    use super::*;
    use crate::{Headers, Reason, ResolvedKey, SecretInput, Verified, Verifier};
    use proptest::prelude::*;

    const WEBHOOK_ID: &str = "8PT597110X687430LKGECATA";
    const CERT: &str =
        "https://api.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-1d93a270";
    const TIME: &str = "2023-11-14T22:13:20Z";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"id":"WH-58D329510W468432D-8HN650336L201105X","create_time":"2023-11-14T22:13:19.000Z","resource_type":"capture","event_type":"PAYMENT.CAPTURE.COMPLETED","summary":"Payment completed","resource":{"id":"42311647XV020574X","status":"COMPLETED"}}"#;

    fn adapter() -> Box<dyn Adapter> {
        build(&AdapterSettings {
            webhook_id: Some(WEBHOOK_ID.into()),
            ..AdapterSettings::default()
        })
        .unwrap()
    }

    fn signed_string(id: &str, time: &str, webhook_id: &str, body: &[u8]) -> String {
        format!("{id}|{time}|{webhook_id}|{}", crc32fast::hash(body))
    }

    fn headers(signature: &str) -> Headers {
        headers_with_algo(signature, SHA256_WITH_RSA)
    }

    fn headers_with_algo(signature: &str, algo: &str) -> Headers {
        [
            (TRANSMISSION_ID, "69cd13f0-d67a-11e5-baa3-778b53f4ae55"),
            (TRANSMISSION_TIME, TIME),
            (SIGNATURE.name, signature),
            (CERT_URL, CERT),
            (AUTH_ALGO, algo),
        ]
        .into_iter()
        .collect()
    }

    fn good_signature(body: &[u8]) -> String {
        rsa_sign(
            &ring::signature::RSA_PKCS1_SHA256,
            signed_string(
                "69cd13f0-d67a-11e5-baa3-778b53f4ae55",
                TIME,
                WEBHOOK_ID,
                body,
            )
            .as_bytes(),
        )
    }

    fn verify(headers: &Headers, body: &[u8], key_pem: &str) -> Result<Verified, Reason> {
        let verifier = Verifier::new(adapter(), Vec::<SecretInput>::new()).unwrap();
        let fetched = ResolvedKey {
            reference: KeyReference::Certificate { url: CERT.into() },
            key: Key::rsa_from_spki_pem(key_pem).unwrap(),
        };
        verifier
            .verify_with_keys(&Request::new(headers, body), NOW, &fetched)
            .map_err(|failure| failure.refusal.reason)
    }

    #[test]
    fn a_valid_notification_verifies_with_the_fetched_key() {
        let verified = verify(&headers(&good_signature(BODY)), BODY, PUBLIC_PEM).unwrap();
        assert_eq!(
            verified.matched_secret_version(),
            crate::FETCHED_KEY_VERSION
        );
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "WH-58D329510W468432D-8HN650336L201105X");
        assert_eq!(
            event.event_type.as_deref(),
            Some("PAYMENT.CAPTURE.COMPLETED")
        );
        assert_eq!(event.object_id.as_deref(), Some("42311647XV020574X"));
        assert!(verified.unsigned_metadata().is_empty());
    }

    #[test]
    fn the_key_reference_is_the_cert_url_header() {
        let headers = headers("x");
        assert_eq!(
            adapter()
                .key_reference(&Request::new(&headers, BODY))
                .unwrap(),
            Some(KeyReference::Certificate { url: CERT.into() })
        );
        let none = Headers::new();
        assert_eq!(
            adapter()
                .key_reference(&Request::new(&none, BODY))
                .unwrap_err()
                .reason,
            Reason::MissingSignature
        );
    }

    #[test]
    fn refusals() {
        let good = good_signature(BODY);
        let mut tampered = BODY.to_vec();
        tampered[10] ^= 1;
        assert_eq!(
            verify(&headers(&good), &tampered, PUBLIC_PEM).unwrap_err(),
            Reason::Signature
        );
        // Another webhook's id in the signed string.
        let other = rsa_sign(
            &ring::signature::RSA_PKCS1_SHA256,
            signed_string(
                "69cd13f0-d67a-11e5-baa3-778b53f4ae55",
                TIME,
                "OTHERWEBHOOK",
                BODY,
            )
            .as_bytes(),
        );
        assert_eq!(
            verify(&headers(&other), BODY, PUBLIC_PEM).unwrap_err(),
            Reason::Signature
        );
        // The right signature, but the fetched key is another one (Wise's).
        assert_eq!(
            verify(
                &headers(&good),
                BODY,
                crate::providers::wise::PRODUCTION_PUBLIC_KEY
            )
            .unwrap_err(),
            Reason::Signature
        );
        let sha1 = headers_with_algo(&good, "SHA1withRSA");
        assert_eq!(
            verify(&sha1, BODY, PUBLIC_PEM).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_time: Headers = headers(&good)
            .iter()
            .filter(|(n, _)| !n.eq_ignore_ascii_case(TRANSMISSION_TIME))
            .collect();
        assert_eq!(
            verify(&no_time, BODY, PUBLIC_PEM).unwrap_err(),
            Reason::Timestamp
        );
        let no_sig: Headers = headers(&good)
            .iter()
            .filter(|(n, _)| !n.eq_ignore_ascii_case(SIGNATURE.name))
            .collect();
        assert_eq!(
            verify(&no_sig, BODY, PUBLIC_PEM).unwrap_err(),
            Reason::MissingSignature
        );
        // Without the fetched key the pipeline refuses; it never falls back.
        let verifier = Verifier::new(adapter(), Vec::<SecretInput>::new()).unwrap();
        assert_eq!(
            verifier
                .verify(&Request::new(&headers(&good), BODY), NOW)
                .unwrap_err()
                .refusal
                .reason,
            Reason::Signature
        );
    }

    #[test]
    fn a_tolerance_set_by_the_operator_applies_to_the_transmission_time() {
        let verifier = Verifier::new(adapter(), Vec::<SecretInput>::new())
            .unwrap()
            .with_tolerance_seconds(Some(300));
        let fetched = ResolvedKey {
            reference: KeyReference::Certificate { url: CERT.into() },
            key: Key::rsa_from_spki_pem(PUBLIC_PEM).unwrap(),
        };
        let headers = headers(&good_signature(BODY));
        let at = |now| {
            verifier
                .verify_with_keys(&Request::new(&headers, BODY), now, &fetched)
                .map_err(|f| f.refusal.reason)
        };
        crate::test_support::assert_window(NOW, 300, at);
    }

    #[test]
    fn settings_are_checked() {
        assert_eq!(
            build(&AdapterSettings::default()).unwrap_err(),
            SettingsError::Missing {
                provider: "paypal",
                field: "webhook_id"
            }
        );
        assert!(matches!(
            build(&AdapterSettings {
                webhook_id: Some("https://example.com".into()),
                ..AdapterSettings::default()
            }),
            Err(SettingsError::Invalid {
                field: "webhook_id",
                ..
            })
        ));
        assert_eq!(
            adapter().parse_key("anything").unwrap_err(),
            KeyError::FetchedFromProvider
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        /// Any change of one byte of the signature is refused. (A change
        /// of the body is refused too, by the CRC — but a CRC can be fixed
        /// on purpose, so that is not a property worth stating.)
        #[test]
        fn single_byte_changes_of_the_signature_are_refused(
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            use base64::Engine;
            let engine = base64::engine::general_purpose::STANDARD;
            let mut signature = engine.decode(good_signature(BODY)).unwrap();
            let i = at.index(signature.len());
            signature[i] ^= flip;
            let changed = engine.encode(&signature);
            prop_assert_eq!(verify(&headers(&changed), BODY, PUBLIC_PEM).unwrap_err(), Reason::Signature);
        }
    }
}
