//! `lemonsqueezy` — Lemon Squeezy webhook signatures.
//!
//! Follows Lemon Squeezy's "Webhook requests" and "Signing requests" pages
//! (docs.lemonsqueezy.com/help/webhooks).
//!
//! - Header: `X-Signature` = hex HMAC-SHA256 of the raw body, keyed with the
//!   webhook's signing secret (6–40 characters) as UTF-8 bytes.
//! - Signed bytes: the raw body only.
//! - Tolerance: none. Lemon Squeezy signs no timestamp.
//! - Event id: **Lemon Squeezy sends none** — no id header, and the body's
//!   `meta` documents only `event_name`, `custom_data` (and `test_mode`);
//!   `meta.webhook_id`, where present, is not documented as a per-event id
//!   and is not used. What *is* stable across retries is the payload itself
//!   (a retry or a dashboard resend sends the same JSON:API resource), so the
//!   id is composed of provider-issued identifiers, never a hash:
//!   `{meta.event_name}:{data.type}:{data.id}:{data.attributes.updated_at}`
//!   (the timestamp text as sent). It names one state of one resource as
//!   reported by one event. Consequence: two *different* changes of the same
//!   resource reported under the same event name with the same `updated_at`
//!   text collide; the second one is then a conflict (409) and is not stored.
//!   A body missing any of the four parts is `missing_event_id`.
//! - Type: `meta.event_name` (signed), else the `X-Event-Name` header.
//!   Object id: `data.id`. Created: `data.attributes.updated_at` (RFC 3339).
//!   No object version.
//! - Redelivery window: automatic retries end about 155 s after the first
//!   attempt (3 retries, e.g. 5 s, 25 s, 125 s); recent webhooks can also be
//!   resent by hand from the dashboard, so 24 hours are kept.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Signature", Algorithm::HmacSha256);

#[derive(Debug, Default)]
pub struct LemonSqueezy;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(LemonSqueezy))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Lemon Squeezy",
    docs_url: "https://docs.lemonsqueezy.com/help/webhooks/signing-requests",
    scheme: "HMAC-SHA256, hex, `X-Signature`",
    signed_parts: "raw body",
    id_source: "`{meta.event_name}:{data.type}:{data.id}:{data.attributes.updated_at}` (event name may fall back to the `X-Event-Name` header)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython("crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for LemonSqueezy {
    fn name(&self) -> &'static str {
        "lemonsqueezy"
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

    /// HMAC over the body; but the event name, part of the id and the type, falls
    /// back to the unsigned `X-Event-Name` header when the body has no
    /// `meta.event_name`.
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
        let body = envelope::json(request.body)?;
        let event_name = envelope::string_at(&body, "/meta/event_name").or_else(|| {
            request
                .headers
                .get_nonempty("x-event-name")
                .map(str::to_owned)
        });
        let resource_type = envelope::string_at(&body, "/data/type");
        let resource_id = envelope::string_at(&body, "/data/id");
        let updated_at = envelope::string_at(&body, "/data/attributes/updated_at");
        let (Some(name), Some(kind), Some(id), Some(updated)) = (
            event_name.as_deref(),
            resource_type.as_deref(),
            resource_id.as_deref(),
            updated_at.as_deref(),
        ) else {
            return Err(Refusal::missing_event_id(
                "Lemon Squeezy sends no event id, and the body lacks one of meta.event_name, \
                 data.type, data.id, data.attributes.updated_at that compose it",
            ));
        };
        let event = Envelope::with_id(format!("{name}:{kind}:{id}:{updated}"))?
            .event_type(event_name.clone())
            .object_id(resource_id.clone())
            .created_at(envelope::rfc3339_seconds(updated));
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

/// Signs a body the way Lemon Squeezy does: hex HMAC-SHA256 of the raw body.
/// Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "ls-signing-secret";
    const BODY: &[u8] = br#"{"meta":{"event_name":"subscription_updated","custom_data":{"user_id":"u1"}},"data":{"type":"subscriptions","id":"42","attributes":{"status":"active","updated_at":"2023-11-14T22:13:20.000000Z"}}}"#;

    fn verify(headers: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(LemonSqueezy), SECRET);
        let headers: Headers = headers.iter().copied().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_composes_the_id_from_provider_identifiers() {
        let signature = sign(SECRET, BODY);
        let verified = verify(&[("X-Signature", &signature)], BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "subscription_updated:subscriptions:42:2023-11-14T22:13:20.000000Z"
        );
        assert_eq!(event.event_type.as_deref(), Some("subscription_updated"));
        assert_eq!(event.object_id.as_deref(), Some("42"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn the_event_name_header_is_the_fallback() {
        let body = br#"{"meta":{},"data":{"type":"orders","id":"7","attributes":{"updated_at":"2023-11-14T22:13:20Z"}}}"#;
        let signature = sign(SECRET, body);
        let verified = verify(
            &[
                ("X-Signature", &signature),
                ("X-Event-Name", "order_created"),
            ],
            body,
        )
        .unwrap();
        assert_eq!(
            verified.event().unwrap().event_id,
            "order_created:orders:7:2023-11-14T22:13:20Z"
        );
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[40] ^= 1;
        assert_eq!(
            verify(&[("X-Signature", &good)], &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&[("X-Signature", &sign("other", BODY))], BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(&[], BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(&[("X-Signature", "sha256=00")], BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_updated_at = br#"{"meta":{"event_name":"order_created"},"data":{"type":"orders","id":"7","attributes":{}}}"#;
        assert_eq!(
            verify(
                &[("X-Signature", &sign(SECRET, no_updated_at))],
                no_updated_at
            )
            .unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in proptest::collection::vec(any::<u8>(), 1..256),
            secret in "[A-Za-z0-9_]{6,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = Signed::in_header(
                Box::new(LemonSqueezy), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
