//! `coinbase_commerce` — Coinbase Commerce webhook signatures.
//!
//! Follows Coinbase Commerce's "Webhooks security" page
//! (docs.cdp.coinbase.com/commerce/api-architecture/webhooks-security) and
//! the official `coinbase-commerce` SDK's `WebhookSignature.verify_sig_header`
//! (hex HMAC-SHA256 of the raw payload keyed with the shared secret).
//!
//! - Header: `X-CC-Webhook-Signature` = hex HMAC-SHA256 of the raw body,
//!   keyed with the endpoint's shared secret (Settings → Notifications) as
//!   UTF-8 bytes.
//! - Signed bytes: the raw body only.
//! - Tolerance: none. Coinbase Commerce signs no timestamp.
//! - Body: a delivery `{"id", "scheduled_for", "attempt_number", "event"}`.
//!   The top-level `id` names the delivery attempt; the event is `event`.
//! - Event id: body `event.id` (signed), the same on every attempt of one
//!   event (only `attempt_number` and `scheduled_for` change). Type:
//!   `event.type` (`charge:confirmed`). Object id: `event.data.id`.
//!   Created: `event.created_at` (RFC 3339). No object version.
//! - Redelivery window: failed deliveries are retried with exponential
//!   backoff for up to three days.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-CC-Webhook-Signature", Algorithm::HmacSha256);

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Coinbase Commerce",
    docs_url: "https://docs.cdp.coinbase.com/commerce/api-architecture/webhooks-security",
    scheme: "HMAC-SHA256, hex, `X-CC-Webhook-Signature`",
    signed_parts: "raw body",
    id_source: "body `event.id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("coinbase-commerce (PyPI)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct CoinbaseCommerce;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(CoinbaseCommerce))
}

impl Adapter for CoinbaseCommerce {
    fn name(&self) -> &'static str {
        "coinbase_commerce"
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

    /// HMAC over the body, which holds the event's id and type.
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
        let event = envelope::required_id_at(&body, "/event/id")?
            .event_type(envelope::string_at(&body, "/event/type"))
            .object_id(envelope::string_at(&body, "/event/data/id"))
            .created_at(envelope::rfc3339_at(&body, "/event/created_at"));
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

/// Signs a body the way Coinbase Commerce does. Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "cc-shared-secret";
    const BODY: &[u8] = br#"{"id":1,"scheduled_for":"2023-11-14T22:13:20Z","attempt_number":1,"event":{"id":"24934862-d980-46cb-9402-43c81b0cdba6","resource":"event","type":"charge:created","api_version":"2018-03-22","created_at":"2023-11-14T22:13:20Z","data":{"id":"f765421f","code":"66BEOV2A"}}}"#;

    fn verify(signature: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(CoinbaseCommerce), SECRET);
        let headers: Headers = signature
            .map(|s| ("X-CC-Webhook-Signature", s))
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(&sign(SECRET, BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "24934862-d980-46cb-9402-43c81b0cdba6");
        assert_eq!(event.event_type.as_deref(), Some("charge:created"));
        assert_eq!(event.object_id.as_deref(), Some("f765421f"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[40] ^= 1;
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
        let no_event = br#"{"id":1,"event":{"type":"charge:created"}}"#;
        assert_eq!(
            verify(Some(&sign(SECRET, no_event)), no_event).unwrap_err(),
            Reason::MissingEventId
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
                Box::new(CoinbaseCommerce), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
