//! `zendesk` — Zendesk webhooks (`X-Zendesk-Webhook-Signature`).
//!
//! Follows Zendesk's "Verifying webhook authenticity" page
//! (developer.zendesk.com/documentation/webhooks/verifying) and "Webhooks
//! event types" for the event-subscription payloads; Zendesk publishes no
//! SDK that verifies.
//!
//! - Headers: `X-Zendesk-Webhook-Signature` = standard base64 of the
//!   HMAC-SHA256 of `"{timestamp}{raw body}"` (no separator), keyed with
//!   the webhook's signing secret exactly as "Reveal secret" shows it, as
//!   UTF-8 bytes; `X-Zendesk-Webhook-Signature-Timestamp` = the timestamp
//!   as sent, RFC 3339 (`2021-06-10T21:14:56Z`), signed as text.
//! - Tolerance: Zendesk documents the timestamp as its replay protection
//!   but no window; 300 s in both directions, the window of hookinbox's
//!   other timestamped schemes.
//! - Body: a webhook that subscribes to Zendesk events carries the event:
//!   `id`, `type` (`zen:event-type:ticket.created`), `time`, `subject`,
//!   `detail`. A webhook a trigger or automation calls carries whatever
//!   JSON its author wrote, often with an `id` that is not an event's (a
//!   ticket's, the same on every update).
//! - Event id: body `id` when `type` names a Zendesk event
//!   (`zen:event-type:…`, signed); otherwise header
//!   `X-Zendesk-Webhook-Invocation-Id`, one invocation of the webhook with
//!   all its retries, which no signature covers. As some requests' ids
//!   are unsigned the id is declared unsigned, so hookinbox also
//!   deduplicates by body inside the redelivery window. Neither:
//!   `missing_event_id`.
//! - Type: body `type` of an event, none for a trigger's payload. Object
//!   id: `detail.id`. Created: `time` (RFC 3339). No object version.
//! - Only `POST` webhooks reach hookinbox; Zendesk's `GET`/`DELETE` ones
//!   are refused as a wrong method, as for every provider.
//! - Redelivery window: Zendesk retries a few times within minutes (on
//!   409, and on 429/503 with a short `Retry-After`); 24 hours are kept.

use crate::envelope::{Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    envelope, Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, SignedMessage, VectorSource,
};

/// Base64 HMAC-SHA256 of `"{timestamp}{body}"`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("X-Zendesk-Webhook-Signature", Algorithm::HmacSha256).with_length(32);
const TIMESTAMP: &str = "X-Zendesk-Webhook-Signature-Timestamp";
const INVOCATION: &str = "X-Zendesk-Webhook-Invocation-Id";
/// The prefix of the `type` of every Zendesk event.
const EVENT_TYPE_PREFIX: &str = "zen:event-type:";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Zendesk",
    docs_url: "https://developer.zendesk.com/documentation/webhooks/verifying/",
    scheme: "HMAC-SHA256, base64, `X-Zendesk-Webhook-Signature` + `X-Zendesk-Webhook-Signature-Timestamp` (RFC 3339)",
    signed_parts: "`{timestamp}{body}`",
    id_source: "body `id` of a `zen:event-type:` event, else header `X-Zendesk-Webhook-Invocation-Id` (unsigned)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/provb_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Zendesk;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Zendesk))
}

impl Adapter for Zendesk {
    fn name(&self) -> &'static str {
        "zendesk"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// HMAC over the timestamp and the body; the type is read from the
    /// body, but a trigger's payload takes its id from an unsigned header.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            event_id: false,
            ..SignatureCoverage::COMPLETE
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let signature = SIGNATURE.value(request.headers)?;
        let timestamp = required(request.headers, TIMESTAMP)?;
        let seconds = envelope::rfc3339_seconds(timestamp).ok_or_else(|| {
            Refusal::timestamp("X-Zendesk-Webhook-Signature-Timestamp is not an RFC 3339 time")
        })?;
        Ok(SignatureClaim {
            timestamp: Some(seconds),
            message: SignedMessage::new()
                .owned(timestamp.as_bytes().to_vec())
                .borrowed(request.body),
            candidates: vec![SIGNATURE.decode(signature)?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(request.body, &["/id", "/type", "/time", "/detail/id"])?;
        let event_type = body
            .string_at("/type")
            .filter(|kind| kind.starts_with(EVENT_TYPE_PREFIX));
        let event = match &event_type {
            Some(_) => body.required_id_at("/id")?,
            None => {
                let invocation = request.headers.get_nonempty(INVOCATION).ok_or_else(|| {
                    Refusal::missing_event_id(
                        "neither a Zendesk event `id` nor an X-Zendesk-Webhook-Invocation-Id",
                    )
                })?;
                Envelope::with_id(invocation)?
            }
        };
        let event = event
            .object_id(event_type.as_ref().and(body.string_at("/detail/id")))
            .created_at(event_type.as_ref().and(body.rfc3339_at("/time")))
            .event_type(event_type);
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let timestamp = format!("{}Z", crate::signer::utc_date_time(outgoing.now)?);
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(
                SIGNATURE.name,
                SIGNATURE.sign_hmac(secret, &[timestamp.as_bytes(), outgoing.body]),
            )
            .header(TIMESTAMP, timestamp)
            .header(INVOCATION, outgoing.event_id))
    }
}

/// The `X-Zendesk-Webhook-Signature` value for `body` sent at `timestamp`
/// (the header text). Used by tests.
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[timestamp.as_bytes(), body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "fixtureZendeskSigningSecret0000000000000001";
    const NOW: i64 = 1_700_000_000;
    const AT: &str = "2023-11-14T22:13:20Z";
    const EVENT: &[u8] = br#"{"account_id":1234,"detail":{"id":"35436","status":"open"},"event":{},"id":"cbe4028c-7239-495d-b020-f22348516046","subject":"zen:ticket:35436","time":"2023-11-14T22:13:15.000000Z","type":"zen:event-type:ticket.created","zendesk_event_version":"2022-11-06"}"#;
    const TRIGGER: &[u8] = br#"{"id":"35436","status":"open","requester":"ada@example.com"}"#;

    fn verify_at(timestamp: &str, signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Zendesk), SECRET);
        let headers: Headers = [
            (SIGNATURE.name, signature),
            (TIMESTAMP, timestamp),
            (INVOCATION, "01HF0B7Q3W2J9ZK4"),
        ]
        .into_iter()
        .collect();
        test_support::verify(&verifier, &headers, body, NOW)
    }

    fn signed(secret: &str, body: &[u8]) -> Result<Verified, Reason> {
        verify_at(AT, &sign(secret, AT, body), body)
    }

    #[test]
    fn an_event_subscription_reads_the_signed_event() {
        let verified = signed(SECRET, EVENT).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "cbe4028c-7239-495d-b020-f22348516046");
        assert_eq!(
            event.event_type.as_deref(),
            Some("zen:event-type:ticket.created")
        );
        assert_eq!(event.object_id.as_deref(), Some("35436"));
        assert_eq!(event.created_at, Some(NOW - 5));
    }

    #[test]
    fn a_trigger_payload_takes_the_invocation_id_not_its_own_id() {
        let verified = signed(SECRET, TRIGGER).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "01HF0B7Q3W2J9ZK4");
        assert_eq!(event.event_type, None);
        assert_eq!(event.object_id, None);
    }

    #[test]
    fn window_both_directions() {
        test_support::assert_window(NOW, 300, |t| {
            let at = format!(
                "{}Z",
                crate::signer::utc_date_time(t).expect("a representable time")
            );
            verify_at(&at, &sign(SECRET, &at, EVENT), EVENT)
        });
    }

    #[test]
    fn refusals() {
        let mut tampered = EVENT.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify_at(AT, &sign(SECRET, AT, EVENT), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(signed("other", EVENT).unwrap_err(), Reason::Signature);
        // The timestamp is signed: the same signature under another one fails.
        let other_at = "2023-11-14T22:13:21Z";
        assert_eq!(
            verify_at(other_at, &sign(SECRET, AT, EVENT), EVENT).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_at("1700000000", &sign(SECRET, "1700000000", EVENT), EVENT).unwrap_err(),
            Reason::Timestamp
        );
        assert_eq!(
            verify_at(AT, "", EVENT).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify_at(AT, "%%%", EVENT).unwrap_err(),
            Reason::MalformedSignature
        );
        let verifier = test_support::verifier(Box::new(Zendesk), SECRET);
        let no_invocation: Headers = [
            (SIGNATURE.name, sign(SECRET, AT, TRIGGER).as_str()),
            (TIMESTAMP, AT),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            test_support::verify(&verifier, &no_invocation, TRIGGER, NOW).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            status in any::<String>(),
            secret in "[A-Za-z0-9]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "id": "e1", "type": "zen:event-type:ticket.created", "detail": {"status": status}
            }))
            .unwrap();
            let signed = Signed::in_header(
                Box::new(Zendesk), &secret, SIGNATURE, &sign(&secret, AT, &body), &[(TIMESTAMP, AT)],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
