//! `woocommerce` — WooCommerce webhooks.
//!
//! Follows the WooCommerce REST API documentation (Webhooks) and
//! `WC_Webhook::generate_signature` in WooCommerce core
//! (`includes/class-wc-webhook.php`: base64 of `hash_hmac('sha256', payload,
//! secret, true)`, the hash algorithm filterable but SHA-256 by default).
//!
//! - Header: `X-WC-Webhook-Signature` = standard base64 of the HMAC-SHA256 of
//!   the raw body, keyed with the webhook's secret as UTF-8 bytes.
//! - Signed bytes: the raw body only. Tolerance: none, WooCommerce signs no
//!   timestamp.
//! - Event id: header `X-WC-Webhook-Delivery-ID`, the id of the delivery
//!   WooCommerce logs. It is not signed, so the adapter declares the id
//!   unsigned and hookinbox also takes the same body inside the window as the
//!   same event. A request without it: `missing_event_id`.
//! - Type: header `X-WC-Webhook-Topic` (`order.created`), unsigned. Object id:
//!   body `id` (the resource). No object version.
//! - The ping WooCommerce posts when a webhook is saved (`webhook_id=<n>`,
//!   form-encoded) carries no signature and is refused (`missing_signature`).
//! - Redelivery window: WooCommerce documents no automatic retry schedule (a
//!   webhook is disabled after repeated failures); 24 hours is kept.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// The signature header: HMAC-SHA256, base64, `X-WC-Webhook-Signature`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("X-WC-Webhook-Signature", Algorithm::HmacSha256);

#[derive(Debug, Default)]
pub struct WooCommerce;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(WooCommerce))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "WooCommerce",
    docs_url: "https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks",
    scheme: "HMAC-SHA256, base64, `X-WC-Webhook-Signature`",
    signed_parts: "raw body",
    id_source: "header `X-WC-Webhook-Delivery-ID`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for WooCommerce {
    fn name(&self) -> &'static str {
        "woocommerce"
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
            .get_nonempty("x-wc-webhook-delivery-id")
            .ok_or_else(|| Refusal::missing_event_id("no X-WC-Webhook-Delivery-ID header"))?;
        let body = serde_json::from_slice::<serde_json::Value>(request.body).ok();
        let event = Envelope::with_id(id)?
            .event_type(
                headers
                    .get_nonempty("x-wc-webhook-topic")
                    .map(str::to_owned),
            )
            .object_id(body.as_ref().and_then(|b| envelope::string_at(b, "/id")));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(crate::signer::body_hmac(&SIGNATURE, &key, outgoing)?
            .header("X-WC-Webhook-Delivery-ID", outgoing.event_id))
    }
}

/// Signs a body the way WooCommerce does (base64 HMAC-SHA256 of the raw body, with
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

    const SECRET: &str = "woocommerce-test-secret";
    const BODY: &[u8] = br#"{"id":4242,"status":"processing"}"#;
    const OTHERS: &[(&str, &str)] = &[
        ("X-WC-Webhook-Delivery-ID", "d-1"),
        ("X-WC-Webhook-Topic", "order.created"),
    ];

    fn verify(signature: &str, others: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let mut headers: Headers = others.iter().copied().collect();
        headers.append("X-WC-Webhook-Signature", signature);
        let verifier = test_support::verifier(Box::new(WooCommerce), SECRET);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), OTHERS, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "d-1");
        assert_eq!(event.event_type.as_deref(), Some("order.created"));
        // No timestamp is signed, so no freshness check applies.
        assert!(test_support::verify(
            &test_support::verifier(Box::new(WooCommerce), SECRET),
            &{
                let mut h: Headers = OTHERS.iter().copied().collect();
                h.append("X-WC-Webhook-Signature", sign(SECRET, BODY));
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
                &test_support::verifier(Box::new(WooCommerce), SECRET),
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
            .filter(|(n, _)| *n != "X-WC-Webhook-Delivery-ID")
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
            let signed = Signed::in_header(Box::new(WooCommerce), &secret, SIGNATURE, &sign(&secret, &body), OTHERS);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
