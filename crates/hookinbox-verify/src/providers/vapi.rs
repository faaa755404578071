//! `vapi` — Vapi server messages signed by an HMAC custom credential
//! (`x-signature`).
//!
//! Follows Vapi's "Server authentication" page
//! (docs.vapi.ai/server-url/server-authentication, "HMAC") and the
//! `HMACAuthenticationPlan` of its API reference, whose defaults this
//! adapter implements; Vapi publishes no SDK that verifies.
//!
//! - A server URL's credential is chosen in Vapi's dashboard. The HMAC
//!   credential with its defaults sends `x-timestamp` and `x-signature` =
//!   hex HMAC-SHA256 of `"{timestamp}.{raw body}"` (payload format
//!   `{timestamp}.{body}`), the timestamp as sent, keyed with the
//!   credential's secret key exactly as entered (not base64-decoded:
//!   `secretIsBase64` off), as UTF-8 bytes. A credential set to other
//!   headers, another algorithm or another payload format is a
//!   `generic_hmac` endpoint. The older inline `serverUrlSecret` and the
//!   Bearer credential send the secret itself and sign nothing; they are
//!   not accepted (no `x-signature`: `missing_signature`).
//! - Timestamp unit: Vapi's reference does not say whether `x-timestamp`
//!   counts seconds or milliseconds. Both are read: a value of 10^11 or
//!   more is milliseconds (as seconds it would lie beyond the year 5000).
//!   The text is signed as sent either way.
//! - Tolerance: 300 s in both directions; Vapi documents none.
//! - Event id: Vapi sends none. Every server message is `{"message": {…}}`
//!   with its `type` (`end-of-call-report`, `status-update`), the `call`
//!   it belongs to and its own `timestamp` (unix milliseconds), all
//!   signed: the id is `"{type}:{call.id}:{timestamp}"`. A natural key,
//!   not a hash. Without them: `missing_event_id`.
//! - Type: `message.type`. Object id: `message.call.id`. Created:
//!   `message.timestamp`. No object version.
//! - Server messages that wait for an answer (`assistant-request`,
//!   `tool-calls`) are stored like the others; hookinbox answers with its
//!   acceptance, not the assistant or tool result Vapi waits for, so those
//!   message types belong on an endpoint of their own application.
//! - Redelivery window: Vapi does not document retries of server
//!   messages; 24 hours are kept.

use crate::envelope::{Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::unix_timestamp;
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, SignedMessage, VectorSource,
};

/// Hex HMAC-SHA256 of `"{timestamp}.{body}"`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("x-signature", Algorithm::HmacSha256).with_length(32);
const TIMESTAMP: &str = "x-timestamp";
/// From here on a timestamp counts milliseconds (10^11 s is year 5138).
const MILLISECONDS_FROM: i64 = 100_000_000_000;

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Vapi (HMAC credential)",
    docs_url: "https://docs.vapi.ai/server-url/server-authentication",
    scheme: "HMAC-SHA256, hex, `x-signature` + `x-timestamp` (the HMAC credential's defaults)",
    signed_parts: "`{timestamp}.{body}`",
    id_source: "`{message.type}:{message.call.id}:{message.timestamp}` (signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/provb_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Vapi;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Vapi))
}

impl Adapter for Vapi {
    fn name(&self) -> &'static str {
        "vapi"
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

    /// HMAC over the timestamp and the body, which holds the id's parts.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let signature = SIGNATURE.value(request.headers)?;
        let timestamp = unix_timestamp(request.headers, TIMESTAMP)?;
        let seconds = if timestamp.seconds >= MILLISECONDS_FROM {
            timestamp.seconds.div_euclid(1000)
        } else {
            timestamp.seconds
        };
        Ok(SignatureClaim {
            timestamp: Some(seconds),
            message: SignedMessage::new()
                .owned(format!("{}.", timestamp.text))
                .borrowed(request.body),
            candidates: vec![SIGNATURE.decode(signature)?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(
            request.body,
            &["/message/type", "/message/call/id", "/message/timestamp"],
        )?;
        let (Some(kind), Some(call), Some(at)) = (
            body.string_at("/message/type"),
            body.string_at("/message/call/id"),
            body.integer_at("/message/timestamp"),
        ) else {
            return Err(Refusal::missing_event_id(
                "no `message.type`, `message.call.id` and `message.timestamp` to name the message",
            ));
        };
        let event = Envelope::with_id(format!("{kind}:{call}:{at}"))?
            .event_type(Some(kind))
            .object_id(Some(call))
            .created_at(Some(at.div_euclid(1000)));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let millis = outgoing.now.saturating_mul(1000).to_string();
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(TIMESTAMP, millis.as_str())
            .header(
                SIGNATURE.name,
                SIGNATURE.sign_hmac(secret, &[format!("{millis}.").as_bytes(), outgoing.body]),
            ))
    }
}

/// The `x-signature` value for `body` sent with `x-timestamp: {timestamp}`.
/// Used by tests.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(
        secret.as_bytes(),
        &[format!("{timestamp}.").as_bytes(), body],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "fixture-vapi-hmac-credential-secret-01";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"message":{"type":"end-of-call-report","timestamp":1699999995123,"endedReason":"customer-ended-call","call":{"id":"2b9a8f8e-6a1d-4f55-9a3c-8f0f1c7d2e11","orgId":"org-1"},"artifact":{"transcript":"AI: Hello"}}}"#;

    fn verify(timestamp: i64, signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Vapi), SECRET);
        let timestamp = timestamp.to_string();
        let headers: Headers = [(SIGNATURE.name, signature), (TIMESTAMP, timestamp.as_str())]
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, NOW)
    }

    #[test]
    fn valid_request_reads_the_composed_id() {
        let verified = verify(NOW, &sign(SECRET, NOW, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "end-of-call-report:2b9a8f8e-6a1d-4f55-9a3c-8f0f1c7d2e11:1699999995123"
        );
        assert_eq!(event.event_type.as_deref(), Some("end-of-call-report"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("2b9a8f8e-6a1d-4f55-9a3c-8f0f1c7d2e11")
        );
        assert_eq!(event.created_at, Some(NOW - 5));
    }

    #[test]
    fn window_both_directions_in_seconds_and_milliseconds() {
        test_support::assert_window(NOW, 300, |t| verify(t, &sign(SECRET, t, BODY), BODY));
        test_support::assert_window(NOW, 300, |t| {
            verify(t * 1000, &sign(SECRET, t * 1000, BODY), BODY)
        });
    }

    #[test]
    fn refusals() {
        let mut tampered = BODY.to_vec();
        tampered[25] ^= 1;
        assert_eq!(
            verify(NOW, &sign(SECRET, NOW, BODY), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(NOW, &sign("other", NOW, BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(NOW * 1000, &sign(SECRET, NOW, BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(NOW, "", BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(NOW, "not-hex", BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_call = br#"{"message":{"type":"status-update","timestamp":1699999995123}}"#;
        assert_eq!(
            verify(NOW, &sign(SECRET, NOW, no_call), no_call).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            transcript in any::<String>(),
            secret in "[A-Za-z0-9-]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({"message": {
                "type": "transcript", "timestamp": 1, "call": {"id": "c1"}, "transcript": transcript
            }}))
            .unwrap();
            let signed = Signed::in_header(
                Box::new(Vapi), &secret, SIGNATURE, &sign(&secret, NOW, &body),
                &[(TIMESTAMP, "1700000000")],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
