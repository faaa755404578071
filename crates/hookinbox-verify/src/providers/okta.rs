//! `okta` — Okta event hooks, authenticated by the header value configured
//! in Okta.
//!
//! Follows Okta's "Event hooks" guide and its "Create an event hook" help
//! page (developer.okta.com/docs/concepts/event-hooks,
//! help.okta.com/…/automation-hooks/add-event-hooks.htm).
//!
//! - One-time verification: when the hook is created (or "Verify" is
//!   pressed), Okta sends a `GET` with `X-Okta-Verification-Challenge:
//!   <value>` and expects `200` with `{"verification": "<value>"}`. It is
//!   answered by [`Adapter::probe`] (a plain value only, see
//!   [`crate::probe`]); nothing is stored. The answer proves nothing to
//!   either side and changes nothing, so it needs no credential.
//! - Authentication of events: Okta signs nothing. An event hook carries an
//!   "Authentication field" (a header name) and an "Authentication secret"
//!   (its value), sent as is on every request. hookinbox reads
//!   `Authorization`: set the field to `Authorization` and configure the
//!   secret exactly as typed into Okta (`Bearer …`, `Basic …` or any string;
//!   surrounding whitespace is not part of it). The value is compared with
//!   every configured secret version in constant time (`Key::Token`).
//! - Signed bytes: none; whoever holds the secret could send any body
//!   (declared [`BodyCoverage::Token`]): the id and the type, read from the
//!   body, are declared unsigned, so hookinbox also de-duplicates by body
//!   fingerprint. TLS protects the body in transit. The `Authorization`
//!   header is never kept with the event (audit headers drop credentials).
//! - Tolerance: none. Okta signs no timestamp (`eventTime` is metadata).
//! - Event id: body `eventId`, the id of the delivery's envelope, which Okta's
//!   retry repeats. Type: the events' `eventType` when every event of the
//!   request has the same one (`user.session.start`), else the envelope's
//!   `eventType` (`com.okta.event_hook`). Object id: the first event's first
//!   `target[].id`. Created: `eventTime` (RFC 3339). No object version.
//! - Batches: one request's `data.events` may hold several System Log
//!   events; the inbox stores the whole request as **one** event under
//!   `eventId`; splitting it is the consumer's.
//! - Redelivery window: Okta retries a request once when the answer does not
//!   come within 3 seconds (or is a 5xx), and never later. One day is kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Reply};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    Adapter, Algorithm, BodyCoverage, Candidate, Key, KeyError, Outcome, Probe, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignedMessage,
};

/// The header carrying the event hook's "Authentication secret".
const TOKEN_HEADER: &str = "Authorization";

/// The header of the one-time verification `GET`.
const CHALLENGE_HEADER: &str = "X-Okta-Verification-Challenge";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Okta event hooks",
    docs_url: "https://developer.okta.com/docs/concepts/event-hooks/",
    scheme: "shared token, `Authorization` (the hook's authentication secret)",
    signed_parts: "none (token)",
    id_source: "body `eventId` (unsigned)",
    handshake: Some("`GET` with `X-Okta-Verification-Challenge` answered `{\"verification\": …}`"),
    batch: Some("one request (`data.events`, several events) stored as one event"),
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/handshake_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Okta;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Okta))
}

impl Adapter for Okta {
    fn name(&self) -> &'static str {
        "okta"
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

    /// Nothing is signed: a shared token authenticates the request, and the id
    /// and type come from a body nothing binds to it.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Token,
            event_id: false,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::token_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new(),
            candidates: vec![Candidate::new(
                Algorithm::Token,
                required(request.headers, TOKEN_HEADER)?.as_bytes().to_vec(),
            )],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let events = body
            .pointer("/data/events")
            .and_then(serde_json::Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let types: Vec<Option<String>> = events
            .iter()
            .map(|event| envelope::string_at(event, "/eventType"))
            .collect();
        let event_type = match types.first() {
            Some(Some(first)) if types.iter().all(|t| t.as_deref() == Some(first)) => {
                Some(first.clone())
            }
            _ => envelope::string_at(&body, "/eventType"),
        };
        let event = envelope::required_id_at(&body, "/eventId")?
            .event_type(event_type)
            .object_id(
                events
                    .first()
                    .and_then(|event| envelope::string_at(event, "/target/0/id")),
            )
            .created_at(envelope::rfc3339_at(&body, "/eventTime"));
        Ok(Outcome::Event(event))
    }

    fn probe(&self, probe: &Probe<'_>) -> Option<Reply> {
        if probe.method != "GET" {
            return None;
        }
        let challenge = probe.headers.get_nonempty(CHALLENGE_HEADER)?;
        // Only a plain value is echoed, as every challenge is.
        crate::probe::echo_challenge(challenge)?;
        Some(Reply::json(
            &serde_json::json!({ "verification": challenge }),
        ))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        crate::signer::token(TOKEN_HEADER, &key, outgoing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "Bearer okta-hook-secret-0001";
    const BODY: &[u8] = br#"{"eventType":"com.okta.event_hook","eventTypeVersion":"1.0","cloudEventsVersion":"0.1","source":"https://example.okta.com/api/v1/eventHooks/whoql0HfiLGPWc8Jx0g3","eventId":"b5a188b9-5ece-4636-b041-482ffda96311","data":{"events":[{"uuid":"4f1c0c8a-ee3b-11ee-9d4b-1b0c2c2f5d1e","published":"2026-01-01T00:00:00.032Z","eventType":"user.session.start","displayMessage":"User login to Okta","target":[{"id":"00u1abcd2EFGHijk3l4","type":"User"}]}]},"eventTime":"2026-01-01T00:00:00.032Z","contentType":"application/json"}"#;

    fn verify(credential: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Okta), SECRET);
        let headers: Headers = credential
            .map(|value| (TOKEN_HEADER, value))
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    fn probe(method: &str, challenge: Option<&str>) -> Option<Reply> {
        let headers: Headers = challenge
            .map(|value| (CHALLENGE_HEADER, value))
            .into_iter()
            .collect();
        Okta.probe(&Probe {
            method,
            query: None,
            headers: &headers,
        })
    }

    #[test]
    fn the_verification_challenge_is_answered_as_json() {
        let reply = probe("GET", Some("X5ucbEZ9pTBoQmgkR6thGYAX3WUc6JWmrAgeWyTAJ1Bi")).unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.content_type, "application/json");
        let answer: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(
            answer,
            serde_json::json!({"verification": "X5ucbEZ9pTBoQmgkR6thGYAX3WUc6JWmrAgeWyTAJ1Bi"})
        );
        assert!(probe("HEAD", Some("abc")).is_none());
        assert!(probe("GET", None).is_none());
        assert!(probe("GET", Some("")).is_none());
        assert!(probe("GET", Some("\"}, {\"x")).is_none());
    }

    #[test]
    fn a_batch_reads_the_envelope() {
        let verified = verify(Some(SECRET), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "b5a188b9-5ece-4636-b041-482ffda96311");
        assert_eq!(event.event_type.as_deref(), Some("user.session.start"));
        assert_eq!(event.object_id.as_deref(), Some("00u1abcd2EFGHijk3l4"));
        assert_eq!(event.created_at, Some(1_767_225_600));
        let unsigned = verified.unsigned_metadata();
        assert!(unsigned.event_id && unsigned.event_type);
    }

    #[test]
    fn mixed_event_types_fall_back_to_the_envelope_type() {
        let body = br#"{"eventType":"com.okta.event_hook","eventId":"e-2","data":{"events":[{"eventType":"user.session.start"},{"eventType":"user.session.end"}]}}"#;
        let verified = verify(Some(SECRET), body).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_type.as_deref(), Some("com.okta.event_hook"));
        assert_eq!(event.object_id, None);
    }

    #[test]
    fn refusals() {
        for wrong in [
            "Bearer okta-hook-secret-0002",
            "okta-hook-secret-0001",
            "bearer okta-hook-secret-0001",
            "x",
        ] {
            assert_eq!(
                verify(Some(wrong), BODY).unwrap_err(),
                Reason::Signature,
                "{wrong}"
            );
        }
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(Some(SECRET), br#"{"eventType":"com.okta.event_hook"}"#).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(Some(SECRET), b"<xml/>").unwrap_err(),
            Reason::MalformedBody
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn only_the_exact_token_verifies(
            secret in "[ -~]{1,64}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let secret = secret.trim().to_owned();
            prop_assume!(!secret.is_empty());
            let key = Okta.parse_key(&secret).unwrap();
            let claim_for = |token: &[u8]| {
                let headers: Headers = [(TOKEN_HEADER, String::from_utf8_lossy(token).into_owned())]
                    .into_iter()
                    .collect();
                Okta.claim(&Request::new(&headers, BODY)).map(|claim| claim.is_signed_by(&key))
            };
            prop_assert_eq!(claim_for(secret.as_bytes()), Ok(true));
            let mut changed = secret.clone().into_bytes();
            let i = at.index(changed.len());
            changed[i] ^= flip;
            prop_assert_ne!(claim_for(&changed), Ok(true));
        }

        #[test]
        fn any_challenge_is_answered_without_panicking(challenge in ".{0,300}") {
            if let Some(reply) = probe("GET", Some(&challenge)) {
                let answer: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
                prop_assert_eq!(answer["verification"].as_str(), Some(challenge.as_str()));
            }
        }
    }
}
