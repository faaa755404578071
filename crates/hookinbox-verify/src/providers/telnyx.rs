//! `telnyx` — Telnyx webhook signatures (Ed25519, API v2).
//!
//! Follows Telnyx's "Webhook signing" guide
//! (developers.telnyx.com/docs/messaging/messages/receiving-webhooks) and the
//! official `telnyx` SDK's `lib/webhook_verification.verify_webhook_signature`.
//!
//! - Headers: `telnyx-signature-ed25519` (standard base64 of the 64-byte
//!   signature) and `telnyx-timestamp` (integer unix seconds).
//! - Signed bytes: `"{telnyx-timestamp}|{raw body}"`, the timestamp as sent.
//! - Algorithm and key: Ed25519. The configured secret is the account's
//!   *public key* from Mission Control (Keys & Credentials → Public Key):
//!   standard base64 of 32 bytes. Telnyx holds the private key; nothing secret
//!   is configured here.
//! - Tolerance: 300 s in both directions, the SDK's
//!   `TIMESTAMP_TOLERANCE_SECONDS`.
//! - Event id: body `data.id` (signed), the event's UUID, which a retry
//!   repeats (`meta.attempt` counts the attempts). Type: `data.event_type`
//!   (`message.received`). Object id: `data.payload.id`. Created:
//!   `data.occurred_at` (RFC 3339). No object version.
//! - Redelivery window: Telnyx retries a failed webhook (and then the
//!   failover URL) but publishes no overall window; one day is kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    encoding, Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, SignedMessage,
};

/// Standard base64 of the Ed25519 signature.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("telnyx-signature-ed25519", Algorithm::Ed25519).with_length(64);

/// The header carrying the signed timestamp.
const TIMESTAMP: &str = "telnyx-timestamp";

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Telnyx",
    docs_url: "https://developers.telnyx.com/docs/messaging/messages/receiving-webhooks",
    scheme: "Ed25519, base64, `telnyx-signature-ed25519`",
    signed_parts: "`{telnyx-timestamp}|{body}`",
    id_source: "body `data.id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("telnyx (PyPI)"),
    signing: crate::Signing::Asymmetric,
};

#[derive(Debug, Default)]
pub struct Telnyx;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Telnyx))
}

impl Adapter for Telnyx {
    fn name(&self) -> &'static str {
        "telnyx"
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

    /// Ed25519 over the timestamp and the body, which holds the event's id and type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: true,
            event_type: true,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::ed25519_from_bytes(&crate::key::decode_base64(secret).ok_or(KeyError::Base64)?)
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let value = SIGNATURE.value(request.headers)?;
        let timestamp = required(request.headers, TIMESTAMP)?;
        let seconds = encoding::unix_seconds(timestamp, TIMESTAMP)?;
        Ok(SignatureClaim {
            timestamp: Some(seconds),
            message: SignedMessage::new()
                .owned(signed_prefix(timestamp))
                .borrowed(request.body),
            candidates: vec![SIGNATURE.decode(value)?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let id = envelope::string_at(&body, "/data/id")
            .ok_or_else(|| Refusal::missing_event_id("no event id at `/data/id` in the body"))?;
        let event = Envelope::with_id(id)?
            .event_type(envelope::string_at(&body, "/data/event_type"))
            .object_id(envelope::string_at(&body, "/data/payload/id"))
            .created_at(envelope::rfc3339_at(&body, "/data/occurred_at"));
        Ok(Outcome::Event(event))
    }
}

/// What Telnyx signs before the body, from the timestamp header as sent.
fn signed_prefix(timestamp: &str) -> String {
    format!("{timestamp}|")
}

/// Signs a body the way Telnyx does, with the Ed25519 key of `seed`, for
/// the timestamp header value `timestamp`. Used by tests and load generators.
pub fn sign(seed: &[u8; 32], timestamp: &str, body: &[u8]) -> String {
    use ed25519_dalek::Signer;
    let mut message = signed_prefix(timestamp).into_bytes();
    message.extend_from_slice(body);
    let signature = ed25519_dalek::SigningKey::from_bytes(seed).sign(&message);
    SIGNATURE.encode(&signature.to_bytes())
}

/// The public key of `seed` as Telnyx shows it: standard base64.
pub fn public_key(seed: &[u8; 32]) -> String {
    use base64::Engine;
    let key = ed25519_dalek::SigningKey::from_bytes(seed).verifying_key();
    base64::engine::general_purpose::STANDARD.encode(key.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const BODY: &[u8] = br#"{"data":{"event_type":"message.received","id":"b301ed3f-1490-491f-995f-6e64e69674d4","occurred_at":"2023-11-14T22:13:20.000+00:00","payload":{"id":"msg-1","text":"hi"},"record_type":"event"},"meta":{"attempt":1}}"#;
    const NOW: i64 = 1_700_000_000;
    const OTHER_HEADERS: &[(&str, &str)] = &[];

    fn verify_at(
        signature: Option<&str>,
        timestamp: &str,
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Telnyx), &public_key(&SEED));
        let mut headers: Headers = OTHER_HEADERS.iter().copied().collect();
        headers.append(TIMESTAMP, timestamp);
        if let Some(signature) = signature {
            headers.append(SIGNATURE.name, signature);
        }
        test_support::verify(&verifier, &headers, body, NOW)
    }

    fn signed_at(seconds: i64, body: &[u8]) -> Result<Verified, Reason> {
        let timestamp = seconds.to_string();
        verify_at(Some(&sign(&SEED, &timestamp, body)), &timestamp, body)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = signed_at(NOW - 5, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "b301ed3f-1490-491f-995f-6e64e69674d4");
        assert_eq!(event.event_type.as_deref(), Some("message.received"));
        assert_eq!(event.object_id.as_deref(), Some("msg-1"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        assert_eq!(verified.diagnosis().signed_at, Some(NOW - 5));
    }

    #[test]
    fn tolerance_window_both_directions() {
        test_support::assert_window(NOW, 300, |at| signed_at(at, BODY));
    }

    #[test]
    fn refusals() {
        let timestamp = NOW.to_string();
        let good = sign(&SEED, &timestamp, BODY);
        let mut tampered = BODY.to_vec();
        tampered[10] ^= 1;
        assert_eq!(
            verify_at(Some(&good), &timestamp, &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_at(Some(&good), &(NOW - 1).to_string(), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_at(None, &timestamp, BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify_at(Some("AAAA"), &timestamp, BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify_at(Some(&good), "1700000000.0", BODY).unwrap_err(),
            Reason::Timestamp
        );
        let no_id = br#"{"data":{"event_type":"message.received"}}"#;
        assert_eq!(
            verify_at(Some(&sign(&SEED, &timestamp, no_id)), &timestamp, no_id).unwrap_err(),
            Reason::MissingEventId
        );
    }

    const SEED: [u8; 32] = [9; 32];

    #[test]
    fn keys_are_base64_public_keys() {
        assert_eq!(Telnyx.parse_key("!!").unwrap_err(), KeyError::Base64);
        assert!(matches!(
            Telnyx.parse_key("AAAA").unwrap_err(),
            KeyError::PublicKey(_)
        ));
        assert!(Telnyx.parse_key(&public_key(&SEED)).is_ok());
        let other = test_support::verifier(Box::new(Telnyx), &public_key(&[1; 32]));
        let timestamp = NOW.to_string();
        let headers: Headers = [
            (SIGNATURE.name, sign(&SEED, &timestamp, BODY)),
            (TIMESTAMP, timestamp.clone()),
        ]
        .iter()
        .map(|(n, v)| (*n, v.as_str()))
        .collect();
        assert_eq!(
            test_support::verify(&other, &headers, BODY, NOW).unwrap_err(),
            Reason::Signature
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in prop::collection::vec(any::<u8>(), 1..256),
            seed in any::<[u8; 32]>(),
            seconds in 0i64..4_000_000_000,
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let timestamp = seconds.to_string();
            let signed = Signed::in_header(
                Box::new(Telnyx),
                &public_key(&seed),
                SIGNATURE,
                &sign(&seed, &timestamp, &body),
                &[(TIMESTAMP, &timestamp)],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
