//! `heroku` — Heroku app webhooks (`level = sync` or `notify`).
//!
//! Follows Heroku Dev Center's "App Webhooks" article ("Securing webhook
//! requests") and the App Webhooks API reference (`secret`: "a value that
//! Heroku will use to sign all webhook notification requests").
//!
//! - Header: `Heroku-Webhook-Hmac-SHA256` = standard base64 of the HMAC-SHA256
//!   of the raw body, keyed with the subscription's `secret` as UTF-8 bytes.
//! - Signed bytes: the raw body only. Tolerance: none, no timestamp is signed.
//! - Event id: body `webhook_metadata.event.id`, the event's id, the same on
//!   every delivery attempt of that event (each attempt has its own
//!   `webhook_metadata.attempt.id`). Signed. A body that is not JSON:
//!   `malformed_body`; without the id: `missing_event_id`.
//! - Type: `{resource}.{action}` (`release.create`) from the signed body.
//!   Object id: `data.id`. Created: `created_at`. No object version.
//! - Redelivery window: `sync` subscriptions are retried until a limit Heroku
//!   does not publish as a duration; 3 days is kept.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// The signature header: HMAC-SHA256, base64, `Heroku-Webhook-Hmac-SHA256`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("Heroku-Webhook-Hmac-SHA256", Algorithm::HmacSha256);

#[derive(Debug, Default)]
pub struct Heroku;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Heroku))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Heroku (app webhooks)",
    docs_url: "https://devcenter.heroku.com/articles/app-webhooks",
    scheme: "HMAC-SHA256, base64, `Heroku-Webhook-Hmac-SHA256`",
    signed_parts: "raw body",
    id_source: "body `webhook_metadata.event.id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Heroku {
    fn name(&self) -> &'static str {
        "heroku"
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

    /// HMAC over the body; the id and type are read from it.
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
        let id = envelope::string_at(&body, "/webhook_metadata/event/id")
            .ok_or_else(|| Refusal::missing_event_id("no webhook_metadata.event.id"))?;
        let event_type = match (
            envelope::string_at(&body, "/resource"),
            envelope::string_at(&body, "/action"),
        ) {
            (Some(resource), Some(action)) => Some(format!("{resource}.{action}")),
            _ => None,
        };
        let event = Envelope::with_id(&id)?
            .event_type(event_type)
            .object_id(envelope::string_at(&body, "/data/id"))
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

/// Signs a body the way Heroku (app webhooks) does (base64 HMAC-SHA256 of the raw body, with
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

    const SECRET: &str = "heroku-test-secret";
    const BODY: &[u8] = br#"{"action":"create","resource":"release","created_at":"2023-11-14T22:13:20Z","data":{"id":"rel-1"},"webhook_metadata":{"event":{"id":"ev-1"}}}"#;
    const OTHERS: &[(&str, &str)] = &[];

    fn verify(signature: &str, others: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let mut headers: Headers = others.iter().copied().collect();
        headers.append("Heroku-Webhook-Hmac-SHA256", signature);
        let verifier = test_support::verifier(Box::new(Heroku), SECRET);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), OTHERS, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "ev-1");
        assert_eq!(event.event_type.as_deref(), Some("release.create"));
        // No timestamp is signed, so no freshness check applies.
        assert!(test_support::verify(
            &test_support::verifier(Box::new(Heroku), SECRET),
            &{
                let mut h: Headers = OTHERS.iter().copied().collect();
                h.append("Heroku-Webhook-Hmac-SHA256", sign(SECRET, BODY));
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
                &test_support::verifier(Box::new(Heroku), SECRET),
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
        let no_id = br#"{"type":"x"}"#;
        assert_eq!(
            verify(&sign(SECRET, no_id), &[], no_id).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(&sign(SECRET, b"not json"), &[], b"not json").unwrap_err(),
            Reason::MalformedBody
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
            let signed = Signed::in_header(Box::new(Heroku), &secret, SIGNATURE, &sign(&secret, &body), OTHERS);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
