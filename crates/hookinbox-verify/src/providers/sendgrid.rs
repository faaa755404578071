//! `sendgrid` — Twilio SendGrid's Signed Event Webhook.
//!
//! - Headers: `X-Twilio-Email-Event-Webhook-Signature` (base64 of a DER
//!   ECDSA signature) and `X-Twilio-Email-Event-Webhook-Timestamp` (integer
//!   unix seconds).
//! - Signed bytes: `"{timestamp header}{raw body}"`, no separator (as
//!   SendGrid's `EventWebhook.verifySignature` helpers build it).
//! - Algorithm and key: ECDSA P-256 over SHA-256. The configured secret is the
//!   *verification key* SendGrid shows: base64 of the SubjectPublicKeyInfo DER
//!   (a PEM `BEGIN PUBLIC KEY` block is accepted too). It is public; SendGrid
//!   holds the private key.
//! - Tolerance: SendGrid documents none and its SDKs check none. hookinbox
//!   applies 300 s in both directions (the window of its other schemes and of
//!   other receivers of this webhook) so a captured batch cannot be replayed
//!   after its dedup record is gone; an endpoint whose retried batches arrive
//!   with older timestamps can raise it with `tolerance_seconds`.
//! - Body: a JSON *array* of events, each with its own `sg_event_id`. One
//!   request is one batch, and a batch is the unit hookinbox stores.
//! - Event id: `sg_event_id` of the only event for a one-event batch;
//!   `"{first sg_event_id}..{last sg_event_id}/{count}"` for a larger one.
//!   Both ends are SendGrid's own ids (up to 100 characters each), never a
//!   hash. A retried batch is resent identically, so its id is stable. Using
//!   the first id alone would make a *differently* composed batch that starts
//!   with the same event collide with a stored one (a `conflict`, and the
//!   other events of that batch refused until SendGrid gives up); with both
//!   ends and the count such a batch is stored as a new row instead, and its
//!   overlapping events are delivered again — SendGrid already documents
//!   duplicate events, so consumers must dedupe per `sg_event_id` anyway.
//!   Missing `sg_event_id` on the first or last event → `missing_event_id`;
//!   an empty array → `missing_event_id`.
//! - Type: the events' common `event` (`delivered`) when they all share one,
//!   `batch` when they differ — an allowlist filters whole requests, so a
//!   mixed batch is never dropped for its first event's type. Object id:
//!   `sg_message_id` when every event shares it. Created: the first event's
//!   `timestamp`. No object version.
//! - Redelivery window: SendGrid retries a failed POST for 24 hours.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// Standard base64 of the DER ECDSA P-256 signature of `"{timestamp as sent}{body}"`.
const SIGNATURE: SignatureHeader<'static> = SignatureHeader::base64(
    "X-Twilio-Email-Event-Webhook-Signature",
    Algorithm::EcdsaP256Sha256,
);
const TIMESTAMP: &str = "X-Twilio-Email-Event-Webhook-Timestamp";

#[derive(Debug, Default)]
pub struct Sendgrid;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Sendgrid))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Twilio SendGrid (Event Webhook)",
    docs_url: "https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features",
    scheme: "ECDSA P-256 SHA-256 (verification key), base64 DER, `X-Twilio-Email-Event-Webhook-Signature`",
    signed_parts: "`{X-Twilio-Email-Event-Webhook-Timestamp}{body}`",
    id_source: "`sg_event_id` of the only event, else `{first}..{last}/{count}`",
    handshake: None,
    batch: Some("a JSON array of events: the whole request is stored as one event"),
    vectors: VectorSource::OfficialSdk("sendgrid (PyPI), verify only"),
    signing: crate::Signing::Asymmetric,
};

impl Adapter for Sendgrid {
    fn name(&self) -> &'static str {
        "sendgrid"
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

    /// ECDSA over the timestamp and the body, which holds the ids and the types.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        let body: String = secret
            .lines()
            .filter(|line| !line.trim_start().starts_with("-----"))
            .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
            .collect();
        if body.is_empty() {
            return Err(KeyError::Empty);
        }
        let der = crate::key::decode_base64(&body).ok_or(KeyError::Base64)?;
        Key::ecdsa_p256_from_spki_der(&der)
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.timestamped_claim(request, TIMESTAMP, |t| t.text.to_owned())
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let events = body
            .as_array()
            .ok_or_else(|| Refusal::malformed_body("the body is not a JSON array of events"))?;
        if events.iter().any(|e| !e.is_object()) {
            return Err(Refusal::malformed_body(
                "an element of the batch is not an object",
            ));
        }
        let (Some(first), Some(last)) = (events.first(), events.last()) else {
            return Err(Refusal::missing_event_id("the batch has no events"));
        };
        let id_of = |event: &serde_json::Value, which: &str| {
            envelope::string_at(event, "/sg_event_id")
                .filter(|id| !id.trim().is_empty())
                .ok_or_else(|| {
                    Refusal::missing_event_id(format!("the {which} event has no `sg_event_id`"))
                })
        };
        let first_id = id_of(first, "first")?;
        let id = if events.len() == 1 {
            first_id
        } else {
            format!("{first_id}..{}/{}", id_of(last, "last")?, events.len())
        };
        let event = envelope::Envelope::with_id(id)?
            .event_type(common(events, "/event").or_else(|| Some("batch".to_owned())))
            .object_id(common(events, "/sg_message_id"))
            .created_at(envelope::integer_at(first, "/timestamp"));
        Ok(Outcome::Event(event))
    }
}

/// The string every event has at `pointer`, when they all agree.
pub(crate) fn common(events: &[serde_json::Value], pointer: &str) -> Option<String> {
    let first = envelope::string_at(events.first()?, pointer)?;
    events
        .iter()
        .all(|e| envelope::string_at(e, pointer).as_deref() == Some(first.as_str()))
        .then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason};
    use base64::Engine;
    use p256::ecdsa::{signature::Signer, DerSignature, SigningKey};
    use p256::pkcs8::EncodePublicKey;
    use proptest::prelude::*;

    fn signing_key(seed: u8) -> SigningKey {
        SigningKey::from_slice(&[seed; 32]).unwrap()
    }

    fn public_base64(key: &SigningKey) -> String {
        let der = key.verifying_key().to_public_key_der().unwrap();
        base64::engine::general_purpose::STANDARD.encode(der.as_bytes())
    }

    fn sign(key: &SigningKey, timestamp: &str, body: &[u8]) -> String {
        let mut message = timestamp.as_bytes().to_vec();
        message.extend_from_slice(body);
        let signature: DerSignature = key.sign(&message);
        base64::engine::general_purpose::STANDARD.encode(signature.as_bytes())
    }

    fn headers(timestamp: &str, signature: &str) -> Headers {
        [
            ("X-Twilio-Email-Event-Webhook-Signature", signature),
            ("X-Twilio-Email-Event-Webhook-Timestamp", timestamp),
        ]
        .into_iter()
        .collect()
    }

    fn verify(h: &Headers, body: &[u8], now: i64) -> Result<Outcome, Reason> {
        let verifier = test_support::verifier(Box::new(Sendgrid), &public_base64(&signing_key(1)));
        test_support::verify(&verifier, h, body, now).map(|v| v.into_outcome())
    }

    fn event_id(body: &[u8]) -> Result<String, Reason> {
        let h = headers("1000", &sign(&signing_key(1), "1000", body));
        match verify(&h, body, 1000)? {
            Outcome::Event(event) => Ok(event.event_id),
            other => panic!("{other:?}"),
        }
    }

    const ONE: &[u8] = br#"[{"email":"a@example.com","timestamp":1700000000,"event":"delivered","sg_event_id":"ZGVsaXZlcmVkLTAtMjQ0","sg_message_id":"m1.filter"}]"#;

    #[test]
    fn one_event_batch_verifies_with_its_sg_event_id() {
        let h = headers("1000", &sign(&signing_key(1), "1000", ONE));
        let Outcome::Event(event) = verify(&h, ONE, 1000).unwrap() else {
            panic!("expected an event");
        };
        assert_eq!(event.event_id, "ZGVsaXZlcmVkLTAtMjQ0");
        assert_eq!(event.event_type.as_deref(), Some("delivered"));
        assert_eq!(event.object_id.as_deref(), Some("m1.filter"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn larger_batches_are_named_by_both_ends_and_their_size() {
        let body = br#"[{"event":"processed","sg_event_id":"e1","sg_message_id":"m1"},{"event":"open","sg_event_id":"e2","sg_message_id":"m1"},{"event":"click","sg_event_id":"e3","sg_message_id":"m2"}]"#;
        let h = headers("1000", &sign(&signing_key(1), "1000", body));
        let Outcome::Event(event) = verify(&h, body, 1000).unwrap() else {
            panic!("expected an event");
        };
        assert_eq!(event.event_id, "e1..e3/3");
        assert_eq!(event.event_type.as_deref(), Some("batch"));
        assert_eq!(event.object_id, None);
        let same_start = br#"[{"sg_event_id":"e1"},{"sg_event_id":"e9"}]"#;
        assert_eq!(event_id(same_start).unwrap(), "e1..e9/2");
    }

    #[test]
    fn batches_without_ids_are_refused_after_verification() {
        for (body, reason) in [
            (&b"[]"[..], Reason::MissingEventId),
            (br#"[{"event":"open"}]"#, Reason::MissingEventId),
            (
                br#"[{"sg_event_id":"e1"},{"event":"open"}]"#,
                Reason::MissingEventId,
            ),
            (br#"{"sg_event_id":"e1"}"#, Reason::MalformedBody),
            (br#"[{"sg_event_id":"e1"},7]"#, Reason::MalformedBody),
        ] {
            assert_eq!(
                event_id(body).unwrap_err(),
                reason,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn tampered_body_and_wrong_key_are_signature_refusals() {
        let h = headers("1000", &sign(&signing_key(1), "1000", ONE));
        let mut tampered = ONE.to_vec();
        tampered[5] ^= 1;
        assert_eq!(verify(&h, &tampered, 1000).unwrap_err(), Reason::Signature);
        let other = headers("1000", &sign(&signing_key(2), "1000", ONE));
        assert_eq!(verify(&other, ONE, 1000).unwrap_err(), Reason::Signature);
        let moved = headers("1001", &sign(&signing_key(1), "1000", ONE));
        assert_eq!(verify(&moved, ONE, 1000).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn a_high_s_signature_from_a_non_normalising_signer_still_verifies() {
        // SendGrid's signer is not known to normalise `s`; P-256 verification
        // accepts both halves, and so must we.
        let mut message = b"1000".to_vec();
        message.extend_from_slice(ONE);
        let signature: p256::ecdsa::Signature = signing_key(1).sign(&message);
        let (r, s) = signature.split_scalars();
        let high = p256::ecdsa::Signature::from_scalars(r, -*s).unwrap();
        let der = base64::engine::general_purpose::STANDARD.encode(high.to_der().as_bytes());
        assert!(verify(&headers("1000", &der), ONE, 1000).is_ok());
    }

    #[test]
    fn missing_and_malformed_headers() {
        let sig = sign(&signing_key(1), "1000", ONE);
        let only_ts: Headers = [(TIMESTAMP, "1000")].into_iter().collect();
        let only_sig: Headers = [(SIGNATURE.name, sig.as_str())].into_iter().collect();
        assert_eq!(
            verify(&only_ts, ONE, 1000).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(&only_sig, ONE, 1000).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(&headers("1000", "!!not base64!!"), ONE, 1000).unwrap_err(),
            Reason::MalformedSignature
        );
        // Base64 that is not a DER signature is refused by the key, not read as one.
        assert_eq!(
            verify(&headers("1000", "AAAA"), ONE, 1000).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&headers("1000.5", &sig), ONE, 1000).unwrap_err(),
            Reason::Timestamp
        );
    }

    #[test]
    fn window_edges_both_directions() {
        let at = |ts: i64| {
            let text = ts.to_string();
            verify(
                &headers(&text, &sign(&signing_key(1), &text, ONE)),
                ONE,
                10_000,
            )
        };
        test_support::assert_window(10_000, 300, at);
    }

    #[test]
    fn verification_keys_in_base64_or_pem_are_accepted() {
        let b64 = public_base64(&signing_key(1));
        assert!(Sendgrid.parse_key(&b64).is_ok());
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n{}\n-----END PUBLIC KEY-----\n",
            &b64[..40],
            &b64[40..]
        );
        assert!(Sendgrid.parse_key(&pem).is_ok());
        assert_eq!(Sendgrid.parse_key(" ").unwrap_err(), KeyError::Empty);
        assert_eq!(Sendgrid.parse_key("!!").unwrap_err(), KeyError::Base64);
        assert!(matches!(
            Sendgrid.parse_key("AAAA").unwrap_err(),
            KeyError::PublicKey(_)
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_signed_body_verifies_and_any_flipped_byte_does_not(
            seed in any::<[u8; 32]>(),
            body in proptest::collection::vec(any::<u8>(), 0..256),
            index in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            // A seed that is zero or not below the group order is no key; skip it.
            let Ok(signing) = SigningKey::from_slice(&seed) else { return Ok(()); };
            let signature = sign(&signing, "5000", &body);
            let others = [(TIMESTAMP, "5000")];
            let signed = Signed::in_header(
                Box::new(Sendgrid), &public_base64(&signing), SIGNATURE, &signature, &others,
            );
            test_support::check_single_byte_changes(&signed, &body, index, flip)?;
        }
    }
}
