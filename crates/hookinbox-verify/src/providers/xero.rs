//! `xero` — Xero webhooks.
//!
//! - Header: `x-xero-signature`, base64 of the signature.
//! - Signed bytes: the raw body, HMAC-SHA256 keyed with the bytes of the
//!   webhook *signing key* string from the developer portal.
//! - Tolerance: none — Xero signs no timestamp.
//! - Handshake: "intent to receive" requests carry an empty `events` array.
//!   Xero expects 200 with an empty body for a correctly signed one and 401
//!   for an incorrectly signed one. So such a body is answered, *after*
//!   verification, with an empty 200 and never stored; a bad signature takes
//!   the normal `signature` refusal (401).
//! - Body: `{"events":[…],"firstEventSequence":n,"lastEventSequence":m,
//!   "entropy":"…"}`. Events carry `resourceId`, `eventCategory`,
//!   `eventType`, `eventDateUtc`, `tenantId` but *no* event id of their own.
//! - Event id: `"{firstEventSequence}-{lastEventSequence}"`, the sequence
//!   numbers Xero gives the events of the payload. One payload mixes events
//!   of several tenants, so the numbering belongs to the app's webhook, which
//!   is what one hookinbox endpoint stands for. Xero says it keeps
//!   "retrying the request", which resends the same payload and so the same
//!   numbers; it does not promise more (that a retry never re-batches), and
//!   a re-batched payload would get a new id and its events would be
//!   delivered again rather than lost. Not a hash. Missing or non-integer
//!   sequence numbers on a non-empty `events` → `missing_event_id`.
//! - Type: `"{eventCategory}.{eventType}"` (`INVOICE.UPDATE`) when every event
//!   of the payload shares it, `batch` otherwise. Object id: `resourceId`
//!   when every event shares it. Created: the first event's `eventDateUtc`
//!   (UTC even when written without a zone). No object version.
//! - Redelivery window: Xero retries for up to 24 hours, then disables the
//!   webhook.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Reply, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// Standard base64 of the HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("x-xero-signature", Algorithm::HmacSha256);

#[derive(Debug, Default)]
pub struct Xero;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Xero))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Xero",
    docs_url: "https://developer.xero.com/documentation/guides/webhooks/configuring-your-server/",
    scheme: "HMAC-SHA256, base64, `x-xero-signature`",
    signed_parts: "raw body",
    id_source: "`{firstEventSequence}-{lastEventSequence}` from the body",
    handshake: Some("intent-to-receive (empty `events`) answered with an empty 200, not stored"),
    batch: Some("several events (possibly of several tenants) per request: the whole request is stored as one event"),
    vectors: VectorSource::IndependentPython("crates/hookinbox-verify/tests/fixtures/documented/gen_asym_providers.py"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Xero {
    fn name(&self) -> &'static str {
        "xero"
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

    /// HMAC over the body, which holds the sequence numbers (the id) and the types.
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
        let events = body
            .get("events")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| Refusal::malformed_body("no `events` array in the body"))?;
        if events.is_empty() {
            return Ok(Outcome::Handshake(Reply::text(Vec::new())));
        }
        let sequence = |field: &str| {
            body.get(field)
                .and_then(serde_json::Value::as_i64)
                .ok_or_else(|| Refusal::missing_event_id(format!("no integer `{field}`")))
        };
        let first = sequence("firstEventSequence")?;
        let last = sequence("lastEventSequence")?;
        let event_type = common(events, |e| {
            Some(format!(
                "{}.{}",
                envelope::string_at(e, "/eventCategory")?,
                envelope::string_at(e, "/eventType")?
            ))
        });
        let created_at = envelope::string_at(&events[0], "/eventDateUtc").and_then(|text| {
            envelope::rfc3339_seconds(&text)
                .or_else(|| envelope::rfc3339_seconds(&format!("{text}Z")))
        });
        let event = envelope::Envelope::with_id(format!("{first}-{last}"))?
            .event_type(event_type.or_else(|| Some("batch".to_owned())))
            .object_id(common(events, |e| envelope::string_at(e, "/resourceId")))
            .created_at(created_at);
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

/// The value every event yields, when they all agree.
fn common(
    events: &[serde_json::Value],
    read: impl Fn(&serde_json::Value) -> Option<String>,
) -> Option<String> {
    let first = read(events.first()?)?;
    events
        .iter()
        .all(|e| read(e).as_deref() == Some(first.as_str()))
        .then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason};
    use proptest::prelude::*;

    const KEY: &str = "xero-webhook-signing-key";

    fn sign(key: &str, body: &[u8]) -> String {
        SIGNATURE.sign_hmac(key.as_bytes(), &[body])
    }

    fn headers(signature: &str) -> Headers {
        [("x-xero-signature", signature)].into_iter().collect()
    }

    fn verify(h: &Headers, body: &[u8]) -> Result<Outcome, Reason> {
        let verifier = test_support::verifier(Box::new(Xero), KEY);
        test_support::verify(&verifier, h, body, 0).map(|v| v.into_outcome())
    }

    const INTENT: &[u8] =
        br#"{"events":[],"lastEventSequence":0,"firstEventSequence":0,"entropy":"S0m3r4Nd0mt3xt"}"#;
    const INVOICE: &[u8] = br#"{"events":[{"resourceUrl":"https://api.xero.com/api.xro/2.0/Invoices/717f2bfc","resourceId":"717f2bfc-c6d4-41fd-b238-3f2f0c0cf777","eventDateUtc":"2023-11-14T22:13:20.902","eventType":"UPDATE","eventCategory":"INVOICE","tenantId":"c2cc9b6e-9458-4c7d-93cc-f02b81b0594f","tenantType":"ORGANISATION"}],"firstEventSequence":41,"lastEventSequence":41,"entropy":"QWERTY"}"#;

    #[test]
    fn intent_to_receive_is_answered_empty_and_not_stored() {
        let outcome = verify(&headers(&sign(KEY, INTENT)), INTENT).unwrap();
        let Outcome::Handshake(reply) = outcome else {
            panic!("expected a handshake, got {outcome:?}");
        };
        assert_eq!(reply.status, 200);
        assert!(reply.body.is_empty());
    }

    #[test]
    fn incorrectly_signed_intent_to_receive_is_a_signature_refusal() {
        assert_eq!(
            verify(&headers(&sign("wrong-key", INTENT)), INTENT).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn events_verify_with_the_sequence_range_as_id() {
        let Outcome::Event(event) = verify(&headers(&sign(KEY, INVOICE)), INVOICE).unwrap() else {
            panic!("expected an event");
        };
        assert_eq!(event.event_id, "41-41");
        assert_eq!(event.event_type.as_deref(), Some("INVOICE.UPDATE"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("717f2bfc-c6d4-41fd-b238-3f2f0c0cf777")
        );
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn mixed_payloads_are_batches() {
        let body = br#"{"events":[{"resourceId":"a","eventCategory":"INVOICE","eventType":"UPDATE"},{"resourceId":"b","eventCategory":"CONTACT","eventType":"CREATE"}],"firstEventSequence":7,"lastEventSequence":8}"#;
        let Outcome::Event(event) = verify(&headers(&sign(KEY, body)), body).unwrap() else {
            panic!("expected an event");
        };
        assert_eq!(event.event_id, "7-8");
        assert_eq!(event.event_type.as_deref(), Some("batch"));
        assert_eq!(event.object_id, None);
    }

    #[test]
    fn tampered_body_and_wrong_key_are_signature_refusals() {
        let mut tampered = INVOICE.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify(&headers(&sign(KEY, INVOICE)), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&headers(&sign("another-key", INVOICE)), INVOICE).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn missing_and_malformed_headers() {
        assert_eq!(
            verify(&Headers::new(), INVOICE).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(&headers("***"), INVOICE).unwrap_err(),
            Reason::MalformedSignature
        );
    }

    #[test]
    fn verified_bodies_without_sequences_or_events_are_refused() {
        for (body, reason) in [
            (
                &br#"{"events":[{"resourceId":"a"}]}"#[..],
                Reason::MissingEventId,
            ),
            (
                br#"{"events":[{}],"firstEventSequence":"x","lastEventSequence":1}"#,
                Reason::MissingEventId,
            ),
            (br#"{"entropy":"x"}"#, Reason::MalformedBody),
            (b"[]", Reason::MalformedBody),
        ] {
            assert_eq!(
                verify(&headers(&sign(KEY, body)), body).unwrap_err(),
                reason
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_signed_body_verifies_and_any_flipped_byte_does_not(
            key in "[!-~]{1,64}",
            body in proptest::collection::vec(any::<u8>(), 0..256),
            index in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = Signed::in_header(Box::new(Xero), &key, SIGNATURE, &sign(&key, &body), &[]);
            test_support::check_single_byte_changes(&signed, &body, index, flip)?;
        }
    }
}
