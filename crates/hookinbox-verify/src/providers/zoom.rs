//! `zoom` — Zoom event subscriptions (webhooks) verified with the secret token.
//!
//! - Headers: `x-zm-signature: v0=<hex>` and `x-zm-request-timestamp`
//!   (integer unix seconds).
//! - Signed bytes: `"v0:{x-zm-request-timestamp}:{raw body}"`, HMAC-SHA256
//!   keyed with the bytes of the app's *secret token* string.
//! - Tolerance: 300 s in both directions (Zoom's sample verifier uses five
//!   minutes). A malformed timestamp is a `timestamp` refusal.
//! - Handshake: an `endpoint.url_validation` event (sent when the URL is set
//!   and every 72 hours after) is answered, after verification, with
//!   `{"plainToken": p, "encryptedToken": hex(HMAC-SHA256(secret token, p))}`
//!   and never stored.
//! - Event id: Zoom sends *no* event id. `x-zm-trackingid` is a tracing
//!   header that is not signed and not documented as stable across retries,
//!   so it is not used. The id is composed from signed body fields that a
//!   retry re-sends unchanged: `"{event}:{event_ts}"`, then `":{object}"`
//!   where `payload.object.uuid` (else `payload.object.id`) exists, then
//!   `":{participant}"` where `payload.object.participant.participant_uuid`
//!   (else `.user_id`, else `.id`) exists. `event_ts` is the event's time in
//!   milliseconds. This is a natural key, not a hash: two different events of
//!   the same type about the same object (and participant) in the same
//!   millisecond would share it, and the second would be refused as a
//!   `conflict`, visibly, rather than silently merged. No `event` or no
//!   integer `event_ts` → `missing_event_id`.
//! - Type: body `event`. Object id: `payload.object.uuid` (else `.id`).
//!   Created: `event_ts` / 1000. Zoom gives no object version.
//! - Redelivery window: Zoom retries an unacknowledged event 5 minutes, then
//!   20 and 60 minutes after the previous attempt (85 minutes in all); 2 hours
//!   is returned to cover delivery latency.

use secrecy::ExposeSecret;

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature::hmac_sha256;
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Reply, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// `v0=` and the hex HMAC-SHA256 of `"v0:{timestamp as sent}:{body}"`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("x-zm-signature", Algorithm::HmacSha256).with_prefix("v0=");
const TIMESTAMP: &str = "x-zm-request-timestamp";

/// The event Zoom sends to validate an endpoint URL.
const URL_VALIDATION: &str = "endpoint.url_validation";

#[derive(Debug, Default)]
pub struct Zoom;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Zoom))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Zoom",
    docs_url: "https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events",
    scheme: "HMAC-SHA256 (secret token), hex, `x-zm-signature: v0=…`",
    signed_parts: "`v0:{x-zm-request-timestamp}:{body}`",
    id_source: "`{event}:{event_ts}[:{object}][:{participant}]` from the body",
    handshake: Some(
        "`endpoint.url_validation` answered with `plainToken` and its HMAC, not stored",
    ),
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_asym_providers.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Zoom {
    fn name(&self) -> &'static str {
        "zoom"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        2 * 3600
    }

    /// HMAC over the timestamp and the body, which holds every part of the id and
    /// the type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.timestamped_claim(request, TIMESTAMP, |t| format!("v0:{}:", t.text))
    }

    fn envelope(&self, request: &Request<'_>, key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let event = envelope::string_at(&body, "/event")
            .filter(|e| !e.is_empty())
            .ok_or_else(|| Refusal::missing_event_id("no `event` in the body"))?;
        if event == URL_VALIDATION {
            return url_validation_reply(&body, key).map(Outcome::Handshake);
        }
        let event_ts = envelope::integer_at(&body, "/event_ts")
            .ok_or_else(|| Refusal::missing_event_id("no integer `event_ts` in the body"))?;
        let object = envelope::string_at(&body, "/payload/object/uuid")
            .or_else(|| envelope::string_at(&body, "/payload/object/id"))
            .filter(|o| !o.is_empty());
        let participant = ["participant_uuid", "user_id", "id"]
            .iter()
            .find_map(|field| {
                envelope::string_at(&body, &format!("/payload/object/participant/{field}"))
            })
            .filter(|p| !p.is_empty());
        let mut id = format!("{event}:{event_ts}");
        for part in [&object, &participant].into_iter().flatten() {
            id.push(':');
            id.push_str(part);
        }
        let envelope = envelope::Envelope::with_id(id)?
            .event_type(Some(event))
            .object_id(object)
            .created_at(Some(event_ts.div_euclid(1000)));
        Ok(Outcome::Event(envelope))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let timestamp = outgoing.now.to_string();
        let signature = SIGNATURE.sign_hmac(
            secret,
            &[format!("v0:{timestamp}:").as_bytes(), outgoing.body],
        );
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(TIMESTAMP, timestamp)
            .header(SIGNATURE.name, signature))
    }
}

/// The answer to a URL validation: the plain token and its HMAC under the
/// secret token that verified the request. Nothing is compared here; the
/// request was verified before.
fn url_validation_reply(body: &serde_json::Value, key: &Key) -> Result<Reply, Refusal> {
    let plain_token = envelope::string_at(body, "/payload/plainToken")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Refusal::malformed_body("url validation without `payload.plainToken`"))?;
    let Key::Hmac(secret) = key else {
        return Err(Refusal::signature(
            "url validation needs the HMAC secret token that verified it",
        ));
    };
    let encrypted_token = hex::encode(hmac_sha256(
        secret.expose_secret(),
        &[plain_token.as_bytes()],
    ));
    // Written by hand so the field order is Zoom's documented one whatever
    // map order serde_json is built with.
    let plain_token = serde_json::Value::String(plain_token);
    Ok(Reply {
        status: 200,
        content_type: "application/json",
        body: format!(r#"{{"plainToken":{plain_token},"encryptedToken":"{encrypted_token}"}}"#)
            .into_bytes(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason};
    use proptest::prelude::*;

    const SECRET: &str = "zoom_secret_token";

    fn hmac_hex(secret: &str, message: &[u8]) -> String {
        hex::encode(hmac_sha256(secret.as_bytes(), &[message]))
    }

    fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
        SIGNATURE.sign_hmac(
            secret.as_bytes(),
            &[format!("v0:{timestamp}:").as_bytes(), body],
        )
    }

    fn headers(timestamp: &str, signature: &str) -> Headers {
        [
            ("x-zm-signature", signature),
            ("x-zm-request-timestamp", timestamp),
        ]
        .into_iter()
        .collect()
    }

    fn verify(h: &Headers, body: &[u8], now: i64) -> Result<Outcome, Reason> {
        let verifier = test_support::verifier(Box::new(Zoom), SECRET);
        test_support::verify(&verifier, h, body, now).map(|v| v.into_outcome())
    }

    const STARTED: &[u8] = br#"{"event":"meeting.started","event_ts":1700000000123,"payload":{"account_id":"a1","object":{"id":"85746065432","uuid":"4444AAAiAAAAAiAiAiiAii==","topic":"t"}}}"#;

    #[test]
    fn signed_event_verifies_with_a_composed_id() {
        let h = headers("1700000000", &sign(SECRET, "1700000000", STARTED));
        let Outcome::Event(event) = verify(&h, STARTED, 1_700_000_000).unwrap() else {
            panic!("expected an event");
        };
        assert_eq!(
            event.event_id,
            "meeting.started:1700000000123:4444AAAiAAAAAiAiAiiAii=="
        );
        assert_eq!(event.event_type.as_deref(), Some("meeting.started"));
        assert_eq!(event.object_id.as_deref(), Some("4444AAAiAAAAAiAiAiiAii=="));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn participants_of_one_meeting_get_distinct_ids() {
        let joined = |who: &str| {
            format!(
                r#"{{"event":"meeting.participant_joined","event_ts":5,"payload":{{"object":{{"id":123,"participant":{{"user_id":"{who}"}}}}}}}}"#
            )
        };
        let ids: Vec<String> = ["u1", "u2"]
            .iter()
            .map(|who| {
                let body = joined(who);
                let h = headers("1000", &sign(SECRET, "1000", body.as_bytes()));
                match verify(&h, body.as_bytes(), 1000).unwrap() {
                    Outcome::Event(e) => e.event_id,
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        assert_eq!(
            ids,
            [
                "meeting.participant_joined:5:123:u1",
                "meeting.participant_joined:5:123:u2"
            ]
        );
    }

    #[test]
    fn url_validation_is_answered_with_the_hmac_of_the_plain_token() {
        let body = br#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#;
        let h = headers("1000", &sign(SECRET, "1000", body));
        let outcome = verify(&h, body, 1000).unwrap();
        let Outcome::Handshake(reply) = outcome else {
            panic!("expected a handshake, got {outcome:?}");
        };
        assert_eq!(
            String::from_utf8(reply.body.clone()).unwrap(),
            format!(
                r#"{{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"{}"}}"#,
                hmac_hex(SECRET, b"qgg8vlvZRS6UYooatFL8Aw")
            )
        );
        let answer: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(answer["plainToken"], "qgg8vlvZRS6UYooatFL8Aw");
        assert_eq!(
            answer["encryptedToken"],
            hmac_hex(SECRET, b"qgg8vlvZRS6UYooatFL8Aw")
        );
        assert_eq!(reply.content_type, "application/json");
    }

    #[test]
    fn url_validation_with_a_bad_signature_gets_no_answer() {
        let body = br#"{"payload":{"plainToken":"p"},"event":"endpoint.url_validation"}"#;
        let h = headers("1000", &sign("another_secret", "1000", body));
        assert_eq!(verify(&h, body, 1000).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn tampered_body_and_wrong_secret_are_signature_refusals() {
        let h = headers("1000", &sign(SECRET, "1000", STARTED));
        let mut tampered = STARTED.to_vec();
        tampered[12] ^= 1;
        assert_eq!(verify(&h, &tampered, 1000).unwrap_err(), Reason::Signature);
        let other = headers("1000", &sign("not_the_token", "1000", STARTED));
        assert_eq!(
            verify(&other, STARTED, 1000).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn missing_and_malformed_headers() {
        let sig = sign(SECRET, "1000", STARTED);
        let only_ts: Headers = [("x-zm-request-timestamp", "1000")].into_iter().collect();
        let only_sig: Headers = [("x-zm-signature", sig.as_str())].into_iter().collect();
        assert_eq!(
            verify(&only_ts, STARTED, 1000).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(&only_sig, STARTED, 1000).unwrap_err(),
            Reason::MissingSignature
        );
        for bad in ["v1=abcd", "abcd", "v0=xyz"] {
            assert_eq!(
                verify(&headers("1000", bad), STARTED, 1000).unwrap_err(),
                Reason::MalformedSignature,
                "{bad}"
            );
        }
        assert_eq!(
            verify(&headers("1000000000000.5", &sig), STARTED, 1000).unwrap_err(),
            Reason::Timestamp
        );
    }

    #[test]
    fn window_edges_both_directions() {
        let at = |ts: i64| {
            let text = ts.to_string();
            verify(
                &headers(&text, &sign(SECRET, &text, STARTED)),
                STARTED,
                10_000,
            )
        };
        test_support::assert_window(10_000, 300, at);
    }

    #[test]
    fn bodies_without_id_parts_are_refused_after_verification() {
        for (body, reason) in [
            (&br#"{"event_ts":1}"#[..], Reason::MissingEventId),
            (br#"{"event":"meeting.ended"}"#, Reason::MissingEventId),
            (
                br#"{"event":"endpoint.url_validation","payload":{}}"#,
                Reason::MalformedBody,
            ),
            (b"[1,2", Reason::MalformedBody),
        ] {
            let h = headers("1000", &sign(SECRET, "1000", body));
            assert_eq!(verify(&h, body, 1000).unwrap_err(), reason);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_signed_body_verifies_and_any_flipped_byte_does_not(
            secret in "[!-~]{1,64}",
            body in proptest::collection::vec(any::<u8>(), 0..256),
            index in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signature = sign(&secret, "5000", &body);
            let others = [(TIMESTAMP, "5000")];
            let signed = Signed::in_header(Box::new(Zoom), &secret, SIGNATURE, &signature, &others);
            test_support::check_single_byte_changes(&signed, &body, index, flip)?;
        }
    }
}
