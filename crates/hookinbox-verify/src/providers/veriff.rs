//! `veriff` — Veriff identity-verification webhooks (`X-HMAC-SIGNATURE`).
//!
//! Follows Veriff's "HMAC Authentication and Endpoint Security" page
//! (devdocs.veriff.com/docs/hmac-authentication-and-endpoint-security) and
//! its decision and event webhook references.
//!
//! - Header: `X-HMAC-SIGNATURE`, the hex HMAC-SHA256 of the raw body keyed
//!   with the integration's shared secret key (the "master signature key"
//!   of the Veriff Station), as UTF-8 bytes. `X-AUTH-CLIENT` carries the
//!   public API key, which proves nothing and is not read.
//! - Tolerance: none. Veriff signs no timestamp.
//! - Two kinds of webhook, told apart by their shape, each with an id made
//!   of signed values a retry re-sends unchanged (Veriff sends no event id):
//!   - decision webhooks (`{"status":"success","verification":{…}}`):
//!     `"decision:{verification.id}:{verification.attemptId}:{verification.code}"`
//!     (the attempt left out when absent). Type: `decision.{verification.status}`
//!     (`decision.approved`, `decision.resubmission_requested`). Created:
//!     `verification.decisionTime`.
//!   - event webhooks (`{"id":…,"attemptId":…,"action":"submitted",…}`):
//!     `"event:{id}:{attemptId}:{action}"`. Type: `event.{action}`
//!     (`event.started`, `event.submitted`).
//!
//!   Without the session id and the code (or action): `missing_event_id`.
//!   Object id: the session id, for both.
//! - Redelivery window: Veriff retries an unacknowledged webhook with
//!   growing intervals and publishes no total span; seven days are kept.

use crate::envelope::{Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, VectorSource,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-HMAC-SIGNATURE", Algorithm::HmacSha256).with_length(32);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Veriff",
    docs_url: "https://devdocs.veriff.com/docs/hmac-authentication-and-endpoint-security",
    scheme: "HMAC-SHA256, hex, `X-HMAC-SIGNATURE`",
    signed_parts: "raw body",
    id_source:
        "`decision:{verification.id}:{attemptId}:{code}` or `event:{id}:{attemptId}:{action}`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/ops_commerce_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

const DECISION_SESSION: &str = "/verification/id";
const DECISION_ATTEMPT: &str = "/verification/attemptId";
const DECISION_CODE: &str = "/verification/code";
const DECISION_STATUS: &str = "/verification/status";
const DECISION_TIME: &str = "/verification/decisionTime";
const EVENT_SESSION: &str = "/id";
const EVENT_ATTEMPT: &str = "/attemptId";
const EVENT_ACTION: &str = "/action";

const POINTERS: [&str; 8] = [
    DECISION_SESSION,
    DECISION_ATTEMPT,
    DECISION_CODE,
    DECISION_STATUS,
    DECISION_TIME,
    EVENT_SESSION,
    EVENT_ATTEMPT,
    EVENT_ACTION,
];

#[derive(Debug, Default)]
pub struct Veriff;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Veriff))
}

/// `"{kind}:{session}:{attempt}:{what}"`, the attempt left out when absent.
fn composed_id(kind: &str, session: &str, attempt: Option<&str>, what: &str) -> String {
    match attempt {
        Some(attempt) => format!("{kind}:{session}:{attempt}:{what}"),
        None => format!("{kind}:{session}:{what}"),
    }
}

impl Adapter for Veriff {
    fn name(&self) -> &'static str {
        "veriff"
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

    /// HMAC over the body, from which the id and the type are composed.
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
        let fields = JsonFields::read(request.body, &POINTERS)?;
        if let Some(session) = fields.string_at(DECISION_SESSION) {
            let code = fields.string_at(DECISION_CODE).ok_or_else(|| {
                Refusal::missing_event_id("a decision webhook without `verification.code`")
            })?;
            let attempt = fields.string_at(DECISION_ATTEMPT);
            let id = composed_id("decision", &session, attempt.as_deref(), &code);
            let event = Envelope::with_id(id)?
                .event_type(
                    fields
                        .string_at(DECISION_STATUS)
                        .map(|status| format!("decision.{status}")),
                )
                .object_id(Some(session))
                .created_at(fields.rfc3339_at(DECISION_TIME));
            return Ok(Outcome::Event(event));
        }
        let (Some(session), Some(action)) = (
            fields.string_at(EVENT_SESSION),
            fields.string_at(EVENT_ACTION),
        ) else {
            return Err(Refusal::missing_event_id(
                "neither `verification.id` nor `id` and `action` to name the webhook",
            ));
        };
        let attempt = fields.string_at(EVENT_ATTEMPT);
        let id = composed_id("event", &session, attempt.as_deref(), &action);
        let event = Envelope::with_id(id)?
            .event_type(Some(format!("event.{action}")))
            .object_id(Some(session));
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

/// The `X-HMAC-SIGNATURE` value Veriff sends for `body`. For tests and examples.
pub fn sign(shared_secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(shared_secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "abcdef12-abcd-abcd-abcd-abcdef012345";
    const DECISION: &[u8] = br#"{"status":"success","verification":{"id":"12df6045-3846-3e45-946a-14fa6136d78b","attemptId":"00bca969-b53a-4fad-b065-874d41a7b2b8","code":9001,"person":{"firstName":"SARAH","lastName":"MORGAN"},"reason":null,"reasonCode":null,"status":"approved","vendorData":"12345678","decisionTime":"2023-11-14T22:13:20.123Z","acceptanceTime":"2023-11-14T22:10:00.000Z"},"technicalData":{"ip":"186.153.67.122"}}"#;
    const EVENT: &[u8] = br#"{"id":"f04bdb47-d3be-4b28-b028-a652feb060b5","attemptId":"e30122d1-740b-4764-853f-470374a7abf4","feature":"selfid","code":7002,"action":"submitted","vendorData":"QWE123"}"#;

    fn verify(signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let headers: Headers = [
            ("X-HMAC-SIGNATURE", signature),
            ("X-AUTH-CLIENT", "api-key"),
        ]
        .into_iter()
        .collect();
        let verifier = test_support::verifier(Box::new(Veriff), SECRET);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn a_decision_webhook_is_named_by_session_attempt_and_code() {
        let verified = verify(&sign(SECRET, DECISION), DECISION).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "decision:12df6045-3846-3e45-946a-14fa6136d78b:00bca969-b53a-4fad-b065-874d41a7b2b8:9001"
        );
        assert_eq!(event.event_type.as_deref(), Some("decision.approved"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("12df6045-3846-3e45-946a-14fa6136d78b")
        );
        assert_eq!(event.created_at, Some(1_700_000_000));
        assert!(verified.unsigned_metadata().is_empty());
    }

    #[test]
    fn an_event_webhook_is_named_by_session_attempt_and_action() {
        let verified = verify(&sign(SECRET, EVENT), EVENT).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "event:f04bdb47-d3be-4b28-b028-a652feb060b5:e30122d1-740b-4764-853f-470374a7abf4:submitted"
        );
        assert_eq!(event.event_type.as_deref(), Some("event.submitted"));
        let no_attempt = br#"{"id":"s-1","action":"started"}"#;
        let verified = verify(&sign(SECRET, no_attempt), no_attempt).unwrap();
        assert_eq!(verified.event().unwrap().event_id, "event:s-1:started");
    }

    #[test]
    fn refusals() {
        let mut tampered = DECISION.to_vec();
        tampered[40] ^= 1;
        assert_eq!(
            verify(&sign(SECRET, DECISION), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&sign("other", DECISION), DECISION).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify("", DECISION).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify("xyz", DECISION).unwrap_err(),
            Reason::MalformedSignature
        );
        for body in [
            &br#"{"verification":{"id":"s-1","status":"approved"}}"#[..],
            br#"{"id":"s-1","feature":"selfid"}"#,
            br#"{"status":"success"}"#,
        ] {
            assert_eq!(
                verify(&sign(SECRET, body), body).unwrap_err(),
                Reason::MissingEventId
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            vendor in any::<String>(),
            secret in "[A-Za-z0-9-]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "id": "s-1", "action": "submitted", "vendorData": vendor
            }))
            .unwrap();
            let signed = Signed::in_header(Box::new(Veriff), &secret, SIGNATURE, &sign(&secret, &body), &[]);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
