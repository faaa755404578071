//! `twitch` — Twitch EventSub over the webhook transport.
//!
//! - Headers: `Twitch-Eventsub-Message-Signature: sha256=<hex>`,
//!   `Twitch-Eventsub-Message-Id`, `Twitch-Eventsub-Message-Timestamp`
//!   (RFC 3339 with nanoseconds) and `Twitch-Eventsub-Message-Type`.
//! - Signed bytes: `"{message id}{message timestamp}{raw body}"` — both
//!   headers exactly as sent, no separators — HMAC-SHA256 keyed with the bytes
//!   of the subscription's secret string (10–100 ASCII characters).
//! - Tolerance: 600 s in both directions (Twitch: reject messages whose
//!   timestamp is older than 10 minutes). A timestamp that is not RFC 3339 is
//!   a `timestamp` refusal. A missing id or timestamp header is
//!   `missing_signature`: both are part of the signed bytes.
//! - Handshake: message type `webhook_callback_verification` is answered,
//!   after verification, with the raw `challenge` as `text/plain` and never
//!   stored.
//! - Event id: the `Twitch-Eventsub-Message-Id` header. It is signed, and
//!   Twitch documents that a resent message keeps the same id. Every message
//!   type other than the verification — `notification`, `revocation` and any
//!   later one — is an event.
//! - Type: `subscription.type` for notifications (`channel.follow`); for other
//!   message types `"{message type}.{subscription.type}"`
//!   (`revocation.channel.follow`), so a revocation is never mistaken for an
//!   event of the subscription and an allowlist names it explicitly. Object
//!   id: `subscription.id`. Created: the message timestamp. No object version.
//! - Redelivery window: Twitch documents resends but no window; 24 hours is
//!   returned as a conservative bound.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header;
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Reply, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

/// `sha256=` and the hex HMAC-SHA256 of `"{message id}{timestamp}{body}"`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("Twitch-Eventsub-Message-Signature", Algorithm::HmacSha256)
        .with_prefix("sha256=");
const MESSAGE_ID: &str = "Twitch-Eventsub-Message-Id";
const TIMESTAMP: &str = "Twitch-Eventsub-Message-Timestamp";
const MESSAGE_TYPE: &str = "Twitch-Eventsub-Message-Type";

/// The message type Twitch sends to prove the callback belongs to the app.
const VERIFICATION: &str = "webhook_callback_verification";
const NOTIFICATION: &str = "notification";

#[derive(Debug, Default)]
pub struct Twitch;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Twitch))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Twitch EventSub",
    docs_url:
        "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#verifying-the-event-message",
    scheme: "HMAC-SHA256, hex, `Twitch-Eventsub-Message-Signature: sha256=…`",
    signed_parts: "`{Twitch-Eventsub-Message-Id}{Twitch-Eventsub-Message-Timestamp}{body}`",
    id_source: "header `Twitch-Eventsub-Message-Id`",
    handshake: Some(
        "`webhook_callback_verification` answered with the raw `challenge`, not stored",
    ),
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_asym_providers.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Twitch {
    fn name(&self) -> &'static str {
        "twitch"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(600)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// HMAC over the message id, the timestamp and the body; the type depends on
    /// the unsigned `Twitch-Eventsub-Message-Type` header.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: true,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let headers = request.headers;
        let signature = SIGNATURE.value(headers)?;
        let message_id = signature_header::required(headers, MESSAGE_ID)?;
        let timestamp_text = signature_header::required(headers, TIMESTAMP)?;
        let timestamp = envelope::rfc3339_seconds(timestamp_text).ok_or_else(|| {
            Refusal::timestamp("Twitch-Eventsub-Message-Timestamp is not an RFC 3339 time")
        })?;
        Ok(SignatureClaim {
            timestamp: Some(timestamp),
            message: SignedMessage::new()
                .owned(format!("{message_id}{timestamp_text}"))
                .borrowed(request.body),
            candidates: vec![SIGNATURE.decode(signature)?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let headers = request.headers;
        let body = envelope::json(request.body)?;
        let message_type = headers
            .get_nonempty(MESSAGE_TYPE)
            .ok_or_else(|| Refusal::malformed_body("no Twitch-Eventsub-Message-Type header"))?;
        if message_type == VERIFICATION {
            let challenge = envelope::string_at(&body, "/challenge")
                .filter(|c| !c.is_empty())
                .ok_or_else(|| Refusal::malformed_body("verification without a `challenge`"))?;
            return Ok(Outcome::Handshake(Reply::text(challenge)));
        }
        let message_id = headers
            .get_nonempty(MESSAGE_ID)
            .ok_or_else(|| Refusal::missing_event_id("no Twitch-Eventsub-Message-Id header"))?;
        let subscription_type = envelope::string_at(&body, "/subscription/type")
            .ok_or_else(|| Refusal::malformed_body("no `subscription.type` in the body"))?;
        let event_type = if message_type == NOTIFICATION {
            subscription_type
        } else {
            format!("{message_type}.{subscription_type}")
        };
        let created_at = headers
            .get_nonempty(TIMESTAMP)
            .and_then(envelope::rfc3339_seconds);
        let event = envelope::Envelope::with_id(message_id)?
            .event_type(Some(event_type))
            .object_id(envelope::string_at(&body, "/subscription/id"))
            .created_at(created_at);
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
        let signature = SIGNATURE.sign_hmac(
            secret,
            &[
                outgoing.event_id.as_bytes(),
                timestamp.as_bytes(),
                outgoing.body,
            ],
        );
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(MESSAGE_ID, outgoing.event_id)
            .header(TIMESTAMP, timestamp)
            .header(MESSAGE_TYPE, NOTIFICATION)
            .header(SIGNATURE.name, signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason};
    use proptest::prelude::*;

    const SECRET: &str = "twitch-subscription-secret";
    const ID: &str = "befa7b53-d79d-478f-86b9-120f112b044e";
    /// 2023-11-14T22:13:20Z is unix 1_700_000_000.
    const NOW: i64 = 1_700_000_000;
    const TS: &str = "2023-11-14T22:13:20.634234626Z";

    fn sign(secret: &str, id: &str, timestamp: &str, body: &[u8]) -> String {
        SIGNATURE.sign_hmac(
            secret.as_bytes(),
            &[id.as_bytes(), timestamp.as_bytes(), body],
        )
    }

    fn headers(kind: &str, timestamp: &str, signature: &str) -> Headers {
        [
            ("Twitch-Eventsub-Message-Id", ID),
            ("Twitch-Eventsub-Message-Timestamp", timestamp),
            ("Twitch-Eventsub-Message-Signature", signature),
            ("Twitch-Eventsub-Message-Type", kind),
        ]
        .into_iter()
        .collect()
    }

    fn signed(kind: &str, body: &[u8]) -> Headers {
        headers(kind, TS, &sign(SECRET, ID, TS, body))
    }

    fn verify(h: &Headers, body: &[u8], now: i64) -> Result<Outcome, Reason> {
        let verifier = test_support::verifier(Box::new(Twitch), SECRET);
        test_support::verify(&verifier, h, body, now).map(|v| v.into_outcome())
    }

    const FOLLOW: &[u8] = br#"{"subscription":{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","type":"channel.follow","version":"2","status":"enabled"},"event":{"user_id":"1234","broadcaster_user_id":"1337"}}"#;

    #[test]
    fn notification_verifies_with_the_message_id() {
        let Outcome::Event(event) = verify(&signed("notification", FOLLOW), FOLLOW, NOW).unwrap()
        else {
            panic!("expected an event");
        };
        assert_eq!(event.event_id, ID);
        assert_eq!(event.event_type.as_deref(), Some("channel.follow"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("f1c2a387-161a-49f9-a165-0f21d7a4e1c4")
        );
        assert_eq!(event.created_at, Some(NOW));
    }

    #[test]
    fn revocation_is_an_event_of_its_own_type() {
        let body = br#"{"subscription":{"id":"s1","type":"channel.follow","status":"authorization_revoked"}}"#;
        let Outcome::Event(event) = verify(&signed("revocation", body), body, NOW).unwrap() else {
            panic!("expected an event");
        };
        assert_eq!(event.event_id, ID);
        assert_eq!(
            event.event_type.as_deref(),
            Some("revocation.channel.follow")
        );
    }

    #[test]
    fn verification_is_answered_with_the_raw_challenge() {
        let body = br#"{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"id":"s1","type":"channel.follow"}}"#;
        let outcome = verify(&signed(VERIFICATION, body), body, NOW).unwrap();
        let Outcome::Handshake(reply) = outcome else {
            panic!("expected a handshake, got {outcome:?}");
        };
        assert_eq!(reply.body, b"pogchamp-kappa-360noscope-vohiyo");
        assert!(reply.content_type.starts_with("text/plain"));
    }

    #[test]
    fn unsigned_verification_gets_no_answer() {
        let body = br#"{"challenge":"c","subscription":{"type":"t"}}"#;
        let h = headers(VERIFICATION, TS, &sign("some-other-secret", ID, TS, body));
        assert_eq!(verify(&h, body, NOW).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn tampered_body_id_and_wrong_secret_are_signature_refusals() {
        let mut tampered = FOLLOW.to_vec();
        tampered[20] ^= 1;
        assert_eq!(
            verify(&signed("notification", FOLLOW), &tampered, NOW).unwrap_err(),
            Reason::Signature
        );
        let wrong = headers(
            "notification",
            TS,
            &sign("some-other-secret", ID, TS, FOLLOW),
        );
        assert_eq!(verify(&wrong, FOLLOW, NOW).unwrap_err(), Reason::Signature);
        // The message id is signed: another id with the same signature fails.
        let mut other_id = Headers::new();
        for (name, value) in signed("notification", FOLLOW).iter() {
            let value = if name.eq_ignore_ascii_case(MESSAGE_ID) {
                "other-id"
            } else {
                value
            };
            other_id.append(name, value);
        }
        assert_eq!(
            verify(&other_id, FOLLOW, NOW).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn missing_and_malformed_headers() {
        let full = signed("notification", FOLLOW);
        for missing in [SIGNATURE.name, MESSAGE_ID, TIMESTAMP] {
            let h: Headers = full
                .iter()
                .filter(|(n, _)| !n.eq_ignore_ascii_case(missing))
                .collect();
            assert_eq!(
                verify(&h, FOLLOW, NOW).unwrap_err(),
                Reason::MissingSignature,
                "{missing}"
            );
        }
        for bad in ["sha1=abcd", "abcd", "sha256=xyz"] {
            assert_eq!(
                verify(&headers("notification", TS, bad), FOLLOW, NOW).unwrap_err(),
                Reason::MalformedSignature,
                "{bad}"
            );
        }
        let sig = sign(SECRET, ID, "1700000000", FOLLOW);
        assert_eq!(
            verify(&headers("notification", "1700000000", &sig), FOLLOW, NOW).unwrap_err(),
            Reason::Timestamp
        );
        let no_type: Headers = full
            .iter()
            .filter(|(n, _)| !n.eq_ignore_ascii_case(MESSAGE_TYPE))
            .collect();
        assert_eq!(
            verify(&no_type, FOLLOW, NOW).unwrap_err(),
            Reason::MalformedBody
        );
    }

    #[test]
    fn impossible_signed_timestamps_are_timestamp_refusals() {
        // Each is correctly signed and, read loosely, is exactly `now`:
        // Nov 31 as Dec 1, second 60 as the next minute, +24:00 as a day back.
        for (ts, now) in [
            ("2023-11-31T00:00:00Z", 1_701_388_800),
            ("2023-11-14T22:13:60Z", NOW + 40),
            ("2023-11-14T22:13:20+24:00", NOW - 86_400),
        ] {
            let h = headers("notification", ts, &sign(SECRET, ID, ts, FOLLOW));
            assert_eq!(
                verify(&h, FOLLOW, now).unwrap_err(),
                Reason::Timestamp,
                "{ts}"
            );
        }
        // A leap day is a real day.
        let ts = "2024-02-29T00:00:00.5Z";
        let h = headers("notification", ts, &sign(SECRET, ID, ts, FOLLOW));
        assert!(verify(&h, FOLLOW, 1_709_164_800).is_ok());
    }

    #[test]
    fn window_edges_both_directions() {
        // 2023-11-14T22:03:20Z and 22:23:20Z are exactly 600 s away from NOW.
        let at = |ts: &str| {
            let h = headers("notification", ts, &sign(SECRET, ID, ts, FOLLOW));
            verify(&h, FOLLOW, NOW)
        };
        assert!(at("2023-11-14T22:03:20Z").is_ok());
        assert!(at("2023-11-14T22:23:20Z").is_ok());
        assert_eq!(at("2023-11-14T22:03:19Z").unwrap_err(), Reason::Timestamp);
        assert_eq!(at("2023-11-14T22:23:21Z").unwrap_err(), Reason::Timestamp);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_signed_body_verifies_and_any_flipped_byte_does_not(
            secret in "[!-~]{10,100}",
            body in proptest::collection::vec(any::<u8>(), 0..256),
            index in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signature = sign(&secret, ID, TS, &body);
            let others = [(MESSAGE_TYPE, "notification"), (MESSAGE_ID, ID), (TIMESTAMP, TS)];
            let signed = Signed::in_header(Box::new(Twitch), &secret, SIGNATURE, &signature, &others);
            test_support::check_single_byte_changes(&signed, &body, index, flip)?;
        }
    }
}
