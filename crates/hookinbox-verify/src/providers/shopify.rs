//! `shopify` — Shopify webhook signatures (app webhook subscriptions).
//!
//! Follows Shopify's "Verify webhooks" and "Ignore duplicate webhooks" guides
//! (shopify.dev/docs/apps/build/webhooks) and its 2024 retry changelog.
//!
//! - Header: `X-Shopify-Hmac-Sha256` = standard base64 of the MAC.
//! - Signed bytes: the raw body, nothing else. HMAC-SHA256 keyed with the
//!   app's client secret string as UTF-8 bytes.
//! - Tolerance: none. Shopify signs no timestamp, so a captured request stays
//!   valid; replays are absorbed by the event id dedup, not by freshness.
//! - Event id: header `X-Shopify-Event-Id`, which Shopify documents as the
//!   duplicate-detection key: the same on every retry of one event (and on the
//!   webhooks of several subscriptions to that event). Fallback:
//!   `X-Shopify-Webhook-Id`, stable across retries of one delivery, for
//!   senders that do not set the event id yet. These headers are not signed
//!   and Shopify signs no timestamp: whoever captured a signed request could
//!   replay its body under a new id. The adapter declares the id unsigned,
//!   so hookinbox takes the same body within the redelivery window as the
//!   same event; after it, only TLS keeps requests from being captured. The
//!   headers are only read after the body verified.
//! - Type: header `X-Shopify-Topic` (`orders/create`). Object id: body `id`
//!   when the body is a JSON object (XML subscriptions carry none). Shopify
//!   gives no object version. Created: `X-Shopify-Triggered-At` (RFC 3339),
//!   metadata only, never a freshness check.
//! - Redelivery window: since September 2024, 8 retries over 4 hours with the
//!   original payload.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// Standard base64 of the HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("X-Shopify-Hmac-Sha256", Algorithm::HmacSha256);

#[derive(Debug, Default)]
pub struct Shopify;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Shopify))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Shopify",
    docs_url: "https://shopify.dev/docs/apps/build/webhooks/subscribe/https",
    scheme: "HMAC-SHA256, base64, `X-Shopify-Hmac-Sha256`",
    signed_parts: "raw body",
    id_source: "header `X-Shopify-Event-Id`, else `X-Shopify-Webhook-Id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Shopify {
    fn name(&self) -> &'static str {
        "shopify"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        4 * 3600
    }

    /// HMAC over the body only: the id (`X-Shopify-Event-Id`) and the type
    /// (`X-Shopify-Topic`) are unsigned headers.
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
            .get_nonempty("x-shopify-event-id")
            .or_else(|| headers.get_nonempty("x-shopify-webhook-id"))
            .ok_or_else(|| {
                Refusal::missing_event_id("neither X-Shopify-Event-Id nor X-Shopify-Webhook-Id")
            })?;
        // Shopify bodies are the resource itself; only JSON ones name it.
        let object_id = serde_json::from_slice::<serde_json::Value>(request.body)
            .ok()
            .and_then(|body| envelope::string_at(&body, "/id"));
        let event = Envelope::with_id(id)?
            .event_type(headers.get_nonempty("x-shopify-topic").map(str::to_owned))
            .object_id(object_id)
            .created_at(
                headers
                    .get_nonempty("x-shopify-triggered-at")
                    .and_then(envelope::rfc3339_seconds),
            );
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(crate::signer::body_hmac(&SIGNATURE, &key, outgoing)?
            .header("X-Shopify-Webhook-Id", outgoing.event_id))
    }
}

/// Signs a body the way Shopify does: base64 HMAC-SHA256 of the raw body.
/// Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use base64::Engine;
    use proptest::prelude::*;

    const SECRET: &str = "shpss_test";
    const BODY: &[u8] = br#"{"id":820982911946154508,"email":"jon@example.com"}"#;

    fn headers(signature: &str) -> Headers {
        [
            ("X-Shopify-Hmac-Sha256", signature),
            ("X-Shopify-Topic", "orders/create"),
            ("X-Shopify-Event-Id", "evt-1"),
            ("X-Shopify-Webhook-Id", "wh-1"),
            ("X-Shopify-Triggered-At", "2023-11-14T22:13:20Z"),
        ]
        .into_iter()
        .collect()
    }

    fn verify(headers: &Headers, body: &[u8], now: i64) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Shopify), SECRET);
        test_support::verify(&verifier, headers, body, now)
    }

    fn reason(headers: &Headers, body: &[u8]) -> Reason {
        verify(headers, body, 0).unwrap_err()
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let h = headers(&sign(SECRET, BODY));
        let verified = verify(&h, BODY, 0).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "evt-1");
        assert_eq!(event.event_type.as_deref(), Some("orders/create"));
        assert_eq!(event.object_id.as_deref(), Some("820982911946154508"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn webhook_id_is_the_fallback_id() {
        let h: Headers = [
            ("X-Shopify-Hmac-Sha256", sign(SECRET, BODY).as_str()),
            ("X-Shopify-Webhook-Id", "wh-1"),
        ]
        .into_iter()
        .collect();
        let verified = verify(&h, BODY, 0).unwrap();
        assert_eq!(verified.event().unwrap().event_id, "wh-1");
        let h: Headers = [("X-Shopify-Hmac-Sha256", sign(SECRET, BODY))]
            .into_iter()
            .collect();
        assert_eq!(reason(&h, BODY), Reason::MissingEventId);
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[10] ^= 1;
        assert_eq!(reason(&headers(&good), &tampered), Reason::Signature);
        assert_eq!(
            reason(&headers(&sign("other", BODY)), BODY),
            Reason::Signature
        );
        let h: Headers = [("X-Shopify-Topic", "orders/create")].into_iter().collect();
        assert_eq!(reason(&h, BODY), Reason::MissingSignature);
        assert_eq!(
            reason(&headers("not base64!"), BODY),
            Reason::MalformedSignature
        );
        // Hex is valid base64 text, so it decodes to the wrong bytes: a signature refusal.
        let hex_sig = hex::encode(
            base64::engine::general_purpose::STANDARD
                .decode(&good)
                .unwrap(),
        );
        assert_eq!(reason(&headers(&hex_sig), BODY), Reason::Signature);
    }

    #[test]
    fn no_timestamp_means_no_freshness_check() {
        let h = headers(&sign(SECRET, BODY));
        assert!(verify(&h, BODY, i64::MAX).is_ok());
        assert_eq!(Shopify.default_tolerance_seconds(), None);
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
            let others = [("X-Shopify-Topic", "orders/create"), ("X-Shopify-Event-Id", "evt-1")];
            let signed = Signed::in_header(
                Box::new(Shopify), &secret, SIGNATURE, &sign(&secret, &body), &others,
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
