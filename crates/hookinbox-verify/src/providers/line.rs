//! `line` — LINE Messaging API webhook signatures (`x-line-signature`).
//!
//! Follows LINE's "Receive messages (webhook)" guide and the Messaging API
//! reference "Signature validation"
//! (developers.line.biz/en/reference/messaging-api/#signature-validation), and
//! the official `line-bot-sdk` `SignatureValidator`.
//!
//! - Header: `x-line-signature` = standard base64 of the HMAC-SHA256 of the
//!   raw body, keyed with the channel secret as UTF-8 bytes.
//! - Signed bytes: the raw body only. Tolerance: none (no timestamp).
//! - Handshake: the console's "Verify" button sends a signed body with an
//!   empty `events` list; it is answered 200 (empty) after verification and
//!   never stored.
//! - Batches: `{"destination", "events": [...]}` may carry several events,
//!   each with its own `webhookEventId`. The inbox stores the whole request
//!   as **one** event.
//! - Event id: the only event's `webhookEventId`, or for several
//!   `"{first}..{last}/{count}"`; signed. A redelivered event keeps its
//!   `webhookEventId` (`deliveryContext.isRedelivery` is then true).
//! - Type: the events' `type` (`message`, `follow`, …) when all share it,
//!   `batch` otherwise. Object id: none. Created: the first event's
//!   `timestamp` (milliseconds). No object version.
//! - Redelivery window: redelivery (opt-in in the console) resends failed
//!   events; the pages we follow give no window. One day is kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Reply, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader,
};

/// Standard base64 of the HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("x-line-signature", Algorithm::HmacSha256);

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "LINE Messaging API",
    docs_url: "https://developers.line.biz/en/reference/messaging-api/#signature-validation",
    scheme: "HMAC-SHA256, base64, `x-line-signature`",
    signed_parts: "raw body",
    id_source: "body `events[].webhookEventId` (several: `{first}..{last}/{count}`)",
    handshake: Some("console \"Verify\": a signed body with no events, answered 200"),
    batch: Some("one request (several events) stored as one event"),
    vectors: VectorSource::OfficialSdk("line-bot-sdk (PyPI)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Line;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Line))
}

impl Adapter for Line {
    fn name(&self) -> &'static str {
        "line"
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

    /// HMAC over the body, which holds the events' ids and types.
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
        let events = body
            .get("events")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| Refusal::malformed_body("the body has no `events` list"))?;
        if events.is_empty() {
            return Ok(Outcome::Handshake(Reply::text(Vec::new())));
        }
        let ids: Vec<Option<String>> = events
            .iter()
            .map(|event| envelope::string_at(event, "/webhookEventId"))
            .collect();
        let id = match (ids.first(), ids.last()) {
            (Some(Some(only)), _) if ids.len() == 1 => only.clone(),
            (Some(Some(first)), Some(Some(last))) => format!("{first}..{last}/{}", ids.len()),
            _ => {
                return Err(Refusal::missing_event_id(
                    "the first or last event has no `webhookEventId`",
                ))
            }
        };
        let types: Vec<Option<String>> = events
            .iter()
            .map(|event| envelope::string_at(event, "/type"))
            .collect();
        let event_type = match types.first() {
            Some(Some(first)) if types.iter().all(|t| t.as_ref() == Some(first)) => {
                Some(first.clone())
            }
            _ => Some("batch".to_owned()),
        };
        let event = Envelope::with_id(id)?.event_type(event_type).created_at(
            events
                .first()
                .and_then(|e| envelope::integer_at(e, "/timestamp"))
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
        crate::signer::body_hmac(&SIGNATURE, &key, outgoing)
    }
}

/// Signs a body the way LINE Messaging API does. Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "line-channel-secret";
    const BODY: &[u8] = br#"{"destination":"Uxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","events":[{"type":"message","message":{"type":"text","id":"14353798921116","text":"Hello"},"webhookEventId":"01FZ74A0TDDPYRVKNK77XKC3ZR","deliveryContext":{"isRedelivery":false},"timestamp":1700000000000,"source":{"type":"user","userId":"U4af4980629"},"replyToken":"757913772c4646b784d4b7ce46d12671","mode":"active"}]}"#;
    const OTHER_HEADERS: &[(&str, &str)] = &[];

    #[test]
    fn the_console_verification_is_answered_not_stored() {
        let body = br#"{"destination":"U1","events":[]}"#;
        let verified = verify(Some(&sign(SECRET, body)), body).unwrap();
        assert!(matches!(verified.outcome(), Outcome::Handshake(reply) if reply.status == 200));
        assert_eq!(
            verify(Some(&sign("other", body)), body).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn a_batch_reads_as_one_event() {
        let body = br#"{"destination":"U1","events":[{"type":"follow","webhookEventId":"A"},{"type":"message","webhookEventId":"B"},{"type":"follow","webhookEventId":"C"}]}"#;
        let verified = verify(Some(&sign(SECRET, body)), body).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "A..C/3");
        assert_eq!(event.event_type.as_deref(), Some("batch"));
    }

    fn verify_with(
        signature: Option<&str>,
        others: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Line), SECRET);
        let mut headers: Headers = others.iter().copied().collect();
        if let Some(signature) = signature {
            headers.append(SIGNATURE.name, signature);
        }
        test_support::verify(&verifier, &headers, body, 0)
    }

    fn verify(signature: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        verify_with(signature, OTHER_HEADERS, body)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(&sign(SECRET, BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "01FZ74A0TDDPYRVKNK77XKC3ZR");
        assert_eq!(event.event_type.as_deref(), Some("message"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
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
            verify(Some("!!"), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_id = br#"{"destination":"U1","events":[{"type":"follow"}]}"#;
        assert_eq!(
            verify_with(Some(&sign(SECRET, no_id)), OTHER_HEADERS, no_id).unwrap_err(),
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
                Box::new(Line), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
