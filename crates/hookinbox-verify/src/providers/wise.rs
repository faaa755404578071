//! `wise` — Wise (TransferWise) webhook signatures (`X-Signature-SHA256`).
//!
//! Follows Wise's "Event handling" page for webhooks
//! (docs.wise.com/api-docs/features/webhooks-notifications/event-handling,
//! "Signature verification"): every notification is signed with Wise's
//! private key, RSA with SHA-256, and verified with the public key Wise
//! publishes for its production or sandbox environment.
//!
//! - Header: `X-Signature-SHA256` = standard base64 of the RSA PKCS#1 v1.5
//!   SHA-256 signature of the raw body. (The older SHA-1 `X-Signature` is
//!   not accepted.)
//! - Signed bytes: the raw body only.
//! - Key: nothing secret. A secret version names which published key to
//!   trust: `production` (alias `live`) or `sandbox`, embedded below as
//!   Wise publishes them (the same PEM blocks the community `pywisetransfer`
//!   library carries in `keys.py`). Any other value must be an RSA public
//!   key (PEM `PUBLIC KEY` block, or its base64 DER): for a key Wise rotates
//!   to before this file follows, and for tests.
//! - Tolerance: none. Wise signs no timestamp.
//! - Event id: header `X-Delivery-Id`, Wise's id of the notification, which
//!   its retries repeat. Not signed: the adapter declares it unsigned, so
//!   hookinbox also de-duplicates by body fingerprint. Without it:
//!   `missing_event_id`.
//! - Type: `event_type` (`transfers#state-change`), signed. Object id:
//!   `data.resource.id`. Created: `sent_at` (RFC 3339). No object version.
//! - Redelivery window: Wise retries failed notifications with backoff; the
//!   page we follow gives no window. Seven days are kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};

/// Standard base64 of the RSA signature.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("X-Signature-SHA256", Algorithm::RsaPkcs1Sha256);

/// Wise's published public key for production notifications.
pub const PRODUCTION_PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvO8vXV+JksBzZAY6GhSO
XdoTCfhXaaiZ+qAbtaDBiu2AGkGVpmEygFmWP4Li9m5+Ni85BhVvZOodM9epgW3F
bA5Q1SexvAF1PPjX4JpMstak/QhAgl1qMSqEevL8cmUeTgcMuVWCJmlge9h7B1CS
D4rtlimGZozG39rUBDg6Qt2K+P4wBfLblL0k4C4YUdLnpGYEDIth+i8XsRpFlogx
CAFyH9+knYsDbR43UJ9shtc42Ybd40Afihj8KnYKXzchyQ42aC8aZ/h5hyZ28yVy
Oj3Vos0VdBIs/gAyJ/4yyQFCXYte64I7ssrlbGRaco4nKF3HmaNhxwyKyJafz19e
HwIDAQAB
-----END PUBLIC KEY-----";

/// Wise's published public key for sandbox notifications.
pub const SANDBOX_PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwpb91cEYuyJNQepZAVfP
ZIlPZfNUefH+n6w9SW3fykqKu938cR7WadQv87oF2VuT+fDt7kqeRziTmPSUhqPU
ys/V2Q1rlfJuXbE+Gga37t7zwd0egQ+KyOEHQOpcTwKmtZ81ieGHynAQzsn1We3j
wt760MsCPJ7GMT141ByQM+yW1Bx+4SG3IGjXWyqOWrcXsxAvIXkpUD/jK/L958Cg
nZEgz0BSEh0QxYLITnW1lLokSx/dTianWPFEhMC9BgijempgNXHNfcVirg1lPSyg
z7KqoKUN0oHqWLr2U1A+7kqrl6O2nx3CKs1bj1hToT1+p4kcMoHXA7kA+VBLUpEs
VwIDAQAB
-----END PUBLIC KEY-----";

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Wise",
    docs_url: "https://docs.wise.com/api-docs/features/webhooks-notifications/event-handling",
    scheme: "RSA PKCS#1 v1.5 SHA-256 under Wise's published key (`production` or `sandbox`), base64, `X-Signature-SHA256`",
    signed_parts: "raw body",
    id_source: "header `X-Delivery-Id` (unsigned)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Asymmetric,
};

#[derive(Debug, Default)]
pub struct Wise;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Wise))
}

impl Adapter for Wise {
    fn name(&self) -> &'static str {
        "wise"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        7 * 24 * 3600
    }

    /// RSA over the body, which holds the type; the id is the unsigned
    /// `X-Delivery-Id` header.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: false,
            event_type: true,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        let trimmed = secret.trim();
        match trimmed.to_ascii_lowercase().as_str() {
            "" => Err(KeyError::Empty),
            "production" | "live" => Key::rsa_from_spki_pem(PRODUCTION_PUBLIC_KEY),
            "sandbox" => Key::rsa_from_spki_pem(SANDBOX_PUBLIC_KEY),
            _ => Key::rsa_from_spki_pem(trimmed),
        }
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let id = request
            .headers
            .get_nonempty("x-delivery-id")
            .ok_or_else(|| Refusal::missing_event_id("no X-Delivery-Id header"))?;
        let event = Envelope::with_id(id)?
            .event_type(envelope::string_at(&body, "/event_type"))
            .object_id(envelope::string_at(&body, "/data/resource/id"))
            .created_at(envelope::rfc3339_at(&body, "/sent_at"));
        Ok(Outcome::Event(event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};
    use base64::Engine;
    use proptest::prelude::*;

    const PRIVATE_PKCS8: &[u8] = include_bytes!("../../tests/fixtures/keys/rsa2048_test_only.pk8");
    const PUBLIC_PEM: &str = include_str!("../../tests/fixtures/keys/rsa2048_test_only.pub.pem");
    const BODY: &[u8] = br#"{"data":{"resource":{"type":"transfer","id":111,"profile_id":222,"account_id":333},"current_state":"outgoing_payment_sent","previous_state":"processing","occurred_at":"2023-11-14T22:13:20Z"},"subscription_id":"01234567-89ab-cdef-0123-456789abcdef","event_type":"transfers#state-change","schema_version":"2.0.0","sent_at":"2023-11-14T22:13:20Z"}"#;

    fn sign(body: &[u8]) -> String {
        let pair = ring::signature::RsaKeyPair::from_pkcs8(PRIVATE_PKCS8).unwrap();
        let mut signature = vec![0; pair.public().modulus_len()];
        pair.sign(
            &ring::signature::RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            body,
            &mut signature,
        )
        .unwrap();
        base64::engine::general_purpose::STANDARD.encode(signature)
    }

    fn verify_with(secret: &str, signature: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Wise), secret);
        let mut headers: Headers = [("X-Delivery-Id", "d-1")].into_iter().collect();
        if let Some(signature) = signature {
            headers.append(SIGNATURE.name, signature);
        }
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn the_published_keys_parse_and_are_selectable() {
        for name in ["production", "Live", "sandbox"] {
            assert_eq!(Wise.parse_key(name).unwrap().family(), "rsa", "{name}");
        }
        assert!(Wise.parse_key(PUBLIC_PEM).is_ok());
        assert_eq!(Wise.parse_key(" ").unwrap_err(), KeyError::Empty);
        assert_eq!(
            Wise.parse_key("staging").unwrap_err(),
            KeyError::PublicKey("RSA")
        );
        assert_eq!(Wise.parse_key("not base64!").unwrap_err(), KeyError::Base64);
        // An EC key is not an RSA key.
        let ec = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAES4cZNkW4JUqW77p6u3/u0j7K77KV9nVT9RJ5eh1SkBejmSLUMXLgn4hUZ/WRhLEkXzp5FTNqvX+67fZq6br7xA==";
        assert_eq!(Wise.parse_key(ec).unwrap_err(), KeyError::PublicKey("RSA"));
    }

    #[test]
    fn valid_notification_reads_the_envelope() {
        let verified = verify_with(PUBLIC_PEM, Some(&sign(BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "d-1");
        assert_eq!(event.event_type.as_deref(), Some("transfers#state-change"));
        assert_eq!(event.object_id.as_deref(), Some("111"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        assert!(verified.unsigned_metadata().event_id);
    }

    #[test]
    fn refusals() {
        let good = sign(BODY);
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify_with(PUBLIC_PEM, Some(&good), &tampered).unwrap_err(),
            Reason::Signature
        );
        // Signed by another key than the trusted one: Wise's own.
        assert_eq!(
            verify_with("production", Some(&good), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_with("sandbox", Some(&good), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_with(PUBLIC_PEM, None, BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify_with(PUBLIC_PEM, Some("!!"), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let verifier = test_support::verifier(Box::new(Wise), PUBLIC_PEM);
        let headers: Headers = [(SIGNATURE.name, good.as_str())].into_iter().collect();
        assert_eq!(
            test_support::verify(&verifier, &headers, BODY, 0).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        #[test]
        fn single_byte_changes_of_body_or_signature_are_refused(
            body in prop::collection::vec(any::<u8>(), 1..128),
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = test_support::Signed::in_header(
                Box::new(Wise), PUBLIC_PEM, SIGNATURE, &sign(&body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
