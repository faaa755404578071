//! `paystack` — Paystack webhook signatures (`x-paystack-signature`).
//!
//! Follows Paystack's "Webhooks" guide (paystack.com/docs/payments/webhooks,
//! "Verifying events"): the event payload is signed with HMAC-SHA512 keyed
//! with the account's secret key.
//!
//! - Header: `x-paystack-signature` = hex HMAC-SHA512 of the raw body, keyed
//!   with the secret key (`sk_live_…` / `sk_test_…`) as UTF-8 bytes.
//! - Signed bytes: the raw body only.
//! - Tolerance: none. Paystack signs no timestamp.
//! - Event id: **Paystack sends none**: the body is `{"event", "data"}` and
//!   `data.id` is the id of the transaction (or transfer, subscription, …),
//!   which several events of different kinds share and one kind can repeat
//!   (`invoice.update`). A retry resends the same payload, so the id is the
//!   body's fingerprint: `sha256:` and the hex SHA-256 of the signed raw body.
//!   Two different events are never merged; a byte-for-byte retry is the same
//!   event.
//! - Type: `event` (`charge.success`). Object id: `data.id`. No creation time
//!   or object version is claimed.
//! - Redelivery window: in live mode a failed event is retried every 3
//!   minutes for the first 4 tries, then hourly for the next 72 hours. 73
//!   hours are kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};

/// Hex HMAC-SHA512 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("x-paystack-signature", Algorithm::HmacSha512);

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Paystack",
    docs_url: "https://paystack.com/docs/payments/webhooks/",
    scheme: "HMAC-SHA512, hex, `x-paystack-signature`",
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
pub struct Paystack;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Paystack))
}

impl Adapter for Paystack {
    fn name(&self) -> &'static str {
        "paystack"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        73 * 3600
    }

    /// HMAC over the body, from which the id (its fingerprint) and the type come.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: true,
            event_type: true,
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
            .event_type(envelope::string_at(&body, "/event"))
            .object_id(envelope::string_at(&body, "/data/id"));
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

/// The id of an event Paystack gives no id: `sha256:` and the hex SHA-256
/// of the signed body.
fn body_fingerprint(body: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(body)))
}

/// Signs a body the way Paystack does. Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "sk_test_paystackfixturesecret";
    const BODY: &[u8] = br#"{"event":"charge.success","data":{"id":302961,"domain":"live","status":"success","reference":"qTPrJoy9Bx","amount":10000}}"#;

    fn verify(signature: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Paystack), SECRET);
        let mut headers = Headers::new();
        if let Some(signature) = signature {
            headers.append(SIGNATURE.name, signature);
        }
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(&sign(SECRET, BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, body_fingerprint(BODY));
        assert!(event.event_id.starts_with("sha256:"));
        assert_eq!(event.event_type.as_deref(), Some("charge.success"));
        assert_eq!(event.object_id.as_deref(), Some("302961"));
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
            verify(Some("not-hex"), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let not_an_object = br#"[]"#;
        assert_eq!(
            verify(Some(&sign(SECRET, not_an_object)), not_an_object).unwrap_err(),
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
                Box::new(Paystack), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
