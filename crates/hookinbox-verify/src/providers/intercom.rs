//! `intercom` — Intercom webhook notifications (`X-Hub-Signature`).
//!
//! Follows Intercom's "Webhooks" and "Webhook notifications" pages
//! (developers.intercom.com/docs/webhooks): the notification is signed with
//! the app's client secret, HMAC-SHA1 over the raw body.
//!
//! - Header: `X-Hub-Signature: sha1=<hex>`; the `sha1=` prefix is required.
//! - Signed bytes: the raw body only. HMAC-SHA1 keyed with the app's client
//!   secret (Developer Hub → Basic info) as UTF-8 bytes.
//! - Tolerance: none. Intercom signs no timestamp.
//! - Event id: body `id`, the notification's id (`notif_…`). A redelivered
//!   notification keeps its id, but its delivery fields (`delivery_attempts`,
//!   `delivered_at`) may change, so a redelivery after an acknowledged one can
//!   differ in body fingerprint from the stored copy.
//! - Type: `topic` (`conversation.user.created`). The `ping` topic Intercom
//!   sends to test a subscription is answered (200, empty body) after
//!   verification and never stored. Object id: `data.item.id`. Created:
//!   `created_at` (unix seconds). No object version.
//! - Redelivery window: Intercom publishes no full retry schedule; throttled
//!   notifications are delayed by up to 2 hours. 24 hours are kept.

use crate::envelope::{self, Reply};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// `sha1=` and the hex HMAC-SHA1 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Hub-Signature", Algorithm::HmacSha1).with_prefix("sha1=");

#[derive(Debug, Default)]
pub struct Intercom;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Intercom))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Intercom",
    docs_url: "https://developers.intercom.com/docs/webhooks/webhook-notifications",
    scheme: "HMAC-SHA1 (client secret), hex, `X-Hub-Signature: sha1=…`",
    signed_parts: "raw body",
    id_source: "body `id` (`notif_…`)",
    handshake: Some("`ping` topic answered with an empty 200, not stored"),
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Intercom {
    fn name(&self) -> &'static str {
        "intercom"
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

    /// HMAC over the body, which holds the id and the topic.
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
        let topic = envelope::string_at(&body, "/topic");
        if topic.as_deref() == Some("ping") {
            return Ok(Outcome::Handshake(Reply::text(Vec::new())));
        }
        let event = envelope::required_id_at(&body, "/id")?
            .event_type(topic)
            .object_id(envelope::string_at(&body, "/data/item/id"))
            .created_at(envelope::integer_at(&body, "/created_at"));
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

/// Signs a body the way Intercom does and returns the whole header value
/// (`sha1=<hex>`). Used by tests and load generators.
pub fn sign(client_secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(client_secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "ic-client-secret";
    const BODY: &[u8] = br#"{"type":"notification_event","id":"notif_1","topic":"conversation.user.created","created_at":1700000000,"data":{"type":"notification_event_data","item":{"type":"conversation","id":"c1"}}}"#;

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Intercom), SECRET);
        let headers: Headers = [("X-Hub-Signature", header)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "notif_1");
        assert_eq!(
            event.event_type.as_deref(),
            Some("conversation.user.created")
        );
        assert_eq!(event.object_id.as_deref(), Some("c1"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn a_verified_ping_is_answered_not_stored() {
        let body = br#"{"type":"notification_event","id":"notif_ping","topic":"ping","data":{"item":{"type":"ping","message":"hi"}}}"#;
        let verified = verify(&sign(SECRET, body), body).unwrap();
        assert!(
            matches!(verified.outcome(), crate::Outcome::Handshake(reply) if reply.status == 200)
        );
        assert!(verified.event().is_none());
        // An unsigned ping is refused like anything else.
        assert_eq!(
            verify(&sign("x", body), body).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[50] ^= 1;
        assert_eq!(verify(&good, &tampered).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(&sign("other", BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        let bare = good.trim_start_matches("sha1=");
        assert_eq!(verify(bare, BODY).unwrap_err(), Reason::MalformedSignature);
        assert_eq!(
            verify("sha1=not-hex", BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        // A SHA-256 MAC under the sha1= prefix has the wrong length and never matches.
        let sha256 = format!(
            "sha1={}",
            crate::providers::lemonsqueezy::sign(SECRET, BODY)
        );
        assert_eq!(verify(&sha256, BODY).unwrap_err(), Reason::Signature);
        let body = br#"{"topic":"contact.created"}"#;
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
                Box::new(Intercom), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
