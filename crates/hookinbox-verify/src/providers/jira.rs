//! `jira` — Jira Cloud admin webhooks with a secret (`X-Hub-Signature`).
//!
//! Follows Atlassian's "Webhooks" page for Jira Cloud
//! (developer.atlassian.com/cloud/jira/platform/webhooks, "Secure admin
//! webhooks"), which signs as WebSub's `method=signature`.
//!
//! - Header: `X-Hub-Signature: sha256=<hex>`, the HMAC-SHA256 of the raw body
//!   keyed with the secret entered (or generated) when the webhook was
//!   registered in Jira administration, as UTF-8 bytes. A webhook registered
//!   without a secret is unsigned and is refused (`missing_signature`).
//! - Tolerance: none. Jira signs no timestamp (the body's `timestamp` is
//!   signed but is the event's time, and retries resend it unchanged).
//! - Event id: the `X-Atlassian-Webhook-Identifier` header, unique within
//!   the site and the same on every retry of one webhook. **Unsigned**: so
//!   the adapter declares it so, and hookinbox also treats the same body on
//!   the same endpoint within the redelivery window as the same event. No
//!   header → `missing_event_id`.
//! - Type: body `webhookEvent` (`jira:issue_updated`, `comment_created`),
//!   signed. Object id: `issue.id`, else `comment.id`, `sprint.id`,
//!   `project.id`. Created: `timestamp` (unix milliseconds). No object
//!   version (`changelog.id` orders changes of one issue, but not every event
//!   has one).
//! - Redelivery window: Jira retries a failed delivery a few times (the
//!   `X-Atlassian-Webhook-Retry` header counts them) within well under a
//!   day; one day is kept.

use crate::envelope::{Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, ProviderFacts, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, VectorSource,
};

/// `sha256=` and the hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Hub-Signature", Algorithm::HmacSha256)
        .with_prefix("sha256=")
        .with_length(32);

/// The delivery's id, the same on every retry; not signed.
const IDENTIFIER: &str = "X-Atlassian-Webhook-Identifier";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Jira Cloud",
    docs_url: "https://developer.atlassian.com/cloud/jira/platform/webhooks/",
    scheme: "HMAC-SHA256, hex, `X-Hub-Signature: sha256=…`",
    signed_parts: "raw body",
    id_source: "header `X-Atlassian-Webhook-Identifier`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/ops_commerce_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

const TYPE: &str = "/webhookEvent";
const TIMESTAMP: &str = "/timestamp";
const OBJECTS: [&str; 4] = ["/issue/id", "/comment/id", "/sprint/id", "/project/id"];

#[derive(Debug, Default)]
pub struct Jira;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Jira))
}

impl Adapter for Jira {
    fn name(&self) -> &'static str {
        "jira"
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

    /// HMAC over the body (which holds the type); the id is an unsigned header.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: false,
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
        let pointers = [
            TYPE, TIMESTAMP, OBJECTS[0], OBJECTS[1], OBJECTS[2], OBJECTS[3],
        ];
        let fields = JsonFields::read(request.body, &pointers)?;
        let identifier = request
            .headers
            .get_nonempty(IDENTIFIER)
            .ok_or_else(|| Refusal::missing_event_id("no X-Atlassian-Webhook-Identifier header"))?;
        let object_id = OBJECTS
            .into_iter()
            .find_map(|pointer| fields.string_at(pointer));
        let event = Envelope::with_id(identifier)?
            .event_type(fields.string_at(TYPE))
            .object_id(object_id)
            .created_at(
                fields
                    .integer_at(TIMESTAMP)
                    .map(|millis| millis.div_euclid(1000)),
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
            .header(IDENTIFIER, outgoing.event_id)
            .header("X-Atlassian-Webhook-Flow", "Primary"))
    }
}

/// The `X-Hub-Signature` value Jira sends for `body`. For tests and examples.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "jira-webhook-secret-0123456789";
    const DELIVERY: &str = "0a1b2c3d-4e5f-6789-abcd-ef0123456789";
    const BODY: &[u8] = br#"{"timestamp":1700000000123,"webhookEvent":"jira:issue_updated","issue_event_type_name":"issue_generic","user":{"accountId":"5b10a2844c20165700ede21g"},"issue":{"id":"10002","key":"HOOK-3","fields":{"summary":"Retry budget"}},"changelog":{"id":"10001","items":[{"field":"status","fromString":"To Do","toString":"In Progress"}]}}"#;

    fn verify(
        signature: Option<&str>,
        delivery: Option<&str>,
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let mut headers = Headers::new();
        if let Some(signature) = signature {
            headers.append("X-Hub-Signature", signature);
        }
        if let Some(delivery) = delivery {
            headers.append(IDENTIFIER, delivery);
        }
        let verifier = test_support::verifier(Box::new(Jira), SECRET);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(&sign(SECRET, BODY)), Some(DELIVERY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, DELIVERY);
        assert_eq!(event.event_type.as_deref(), Some("jira:issue_updated"));
        assert_eq!(event.object_id.as_deref(), Some("10002"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        let unsigned = verified.unsigned_metadata();
        assert!(unsigned.event_id);
        assert!(!unsigned.event_type);
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[20] ^= 1;
        assert_eq!(
            verify(Some(&good), Some(DELIVERY), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(Some(&sign("other", BODY)), Some(DELIVERY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(None, Some(DELIVERY), BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(
                Some(good.trim_start_matches("sha256=")),
                Some(DELIVERY),
                BODY
            )
            .unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify(Some(&good), None, BODY).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(Some(&sign(SECRET, b"[1")), Some(DELIVERY), b"[1").unwrap_err(),
            Reason::MalformedBody
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            summary in any::<String>(),
            secret in "[A-Za-z0-9_]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "webhookEvent": "jira:issue_created", "issue": {"id": "1", "fields": {"summary": summary}}
            }))
            .unwrap();
            let signed = Signed::in_header(
                Box::new(Jira), &secret, SIGNATURE, &sign(&secret, &body), &[(IDENTIFIER, DELIVERY)],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
