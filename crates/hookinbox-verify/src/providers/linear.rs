//! `linear` — Linear webhook signatures.
//!
//! Follows Linear's "Webhooks" guide (linear.app/developers/webhooks,
//! "Securing webhooks") and `LinearWebhookClient.verify` of `@linear/sdk`
//! (hex HMAC-SHA256 of the raw body, then `|now - webhookTimestamp| <= 60 s`).
//!
//! - Header: `Linear-Signature` = hex HMAC-SHA256 of the raw body, keyed with
//!   the webhook's signing secret as UTF-8 bytes.
//! - Signed bytes: the raw body only.
//! - Timestamp: body `webhookTimestamp` (unix *milliseconds*). It sits inside
//!   the signed body, so it is the one field read before verification, and
//!   only to obtain the claim's timestamp (floored to seconds). The newer
//!   `Linear-Timestamp` header that the SDK prefers is *not* signed and is
//!   ignored: trusting it would let anyone refresh a captured request.
//!   A body that is not JSON is `malformed_body`; a JSON body without an
//!   integer `webhookTimestamp` is `timestamp`.
//! - Tolerance: 60 s in both directions (the SDK's and the guide's window).
//!   Flooring milliseconds makes the future edge up to 999 ms more lenient.
//! - Event id: header `Linear-Delivery`, a UUID Linear documents as
//!   identifying the payload. Linear does not state in writing whether a
//!   retry repeats it; the header is the only delivery identifier Linear
//!   sends, and it is what Linear's own integrations de-duplicate on. Without
//!   it: `missing_event_id`. The header is not signed; a captured request
//!   replayed under a new delivery id inside the 60 s window is taken as the
//!   same event by its body fingerprint (the adapter declares the id
//!   unsigned); after the window the timestamp stops it.
//! - Type: body `type` and `action` joined with a dot (`Issue.create`) — both
//!   signed — else the `Linear-Event` header (`Issue`). Object id: `data.id`.
//!   Created: `createdAt` (RFC 3339). No object version is claimed.
//! - Redelivery window: a failed delivery is retried three times, after about
//!   1 minute, 1 hour and 6 hours; 8 hours covers the last attempt.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("Linear-Signature", Algorithm::HmacSha256);

#[derive(Debug, Default)]
pub struct Linear;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Linear))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Linear",
    docs_url: "https://linear.app/developers/webhooks",
    scheme: "HMAC-SHA256, hex, `Linear-Signature`",
    signed_parts: "raw body (its `webhookTimestamp` is the timestamp)",
    id_source: "header `Linear-Delivery`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("@linear/sdk (npm), verify only"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Linear {
    fn name(&self) -> &'static str {
        "linear"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(60)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        8 * 3600
    }

    /// HMAC over the body; the id is the unsigned `Linear-Delivery` header, and the
    /// type falls back to the unsigned `Linear-Event` header.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: false,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let candidate = SIGNATURE.candidate(request.headers)?;
        let timestamp = signed_timestamp(request.body)?;
        Ok(SignatureClaim {
            timestamp: Some(timestamp),
            message: SignedMessage::new().borrowed(request.body),
            candidates: vec![candidate],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let id = request
            .headers
            .get_nonempty("linear-delivery")
            .ok_or_else(|| Refusal::missing_event_id("no Linear-Delivery header"))?;
        let event_type = match (
            envelope::string_at(&body, "/type"),
            envelope::string_at(&body, "/action"),
        ) {
            (Some(kind), Some(action)) => Some(format!("{kind}.{action}")),
            (kind, _) => request
                .headers
                .get_nonempty("linear-event")
                .map(str::to_owned)
                .or(kind),
        };
        let event = Envelope::with_id(id)?
            .event_type(event_type)
            .object_id(envelope::string_at(&body, "/data/id"))
            .created_at(envelope::rfc3339_at(&body, "/createdAt"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(crate::signer::body_hmac(&SIGNATURE, &key, outgoing)?
            .header("Linear-Delivery", outgoing.event_id))
    }
}

/// The body's `webhookTimestamp` (milliseconds) as unix seconds. The body is
/// not verified yet: nothing else is read from it here.
fn signed_timestamp(body: &[u8]) -> Result<i64, Refusal> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|_| {
        Refusal::malformed_body("the body is not JSON, so it has no webhookTimestamp")
    })?;
    let millis = value
        .get("webhookTimestamp")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| {
            Refusal::timestamp("the body has no integer webhookTimestamp (milliseconds)")
        })?;
    i64::try_from(millis / 1000).map_err(|_| Refusal::timestamp("webhookTimestamp is out of range"))
}

/// Signs a body the way Linear does: hex HMAC-SHA256 of the raw body. Used by
/// tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "lin_wh_secret";

    fn body_at(millis: i64) -> Vec<u8> {
        format!(
            r#"{{"action":"create","type":"Issue","createdAt":"2023-11-14T22:13:20.000Z","data":{{"id":"iss-1"}},"webhookTimestamp":{millis}}}"#
        )
        .into_bytes()
    }

    fn verify_headers(headers: &[(&str, &str)], body: &[u8], now: i64) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Linear), SECRET);
        let headers: Headers = headers.iter().copied().collect();
        test_support::verify(&verifier, &headers, body, now)
    }

    fn verify(signature: &str, body: &[u8], now: i64) -> Result<Verified, Reason> {
        let headers = [
            ("Linear-Signature", signature),
            ("Linear-Delivery", "del-1"),
            ("Linear-Event", "Issue"),
        ];
        verify_headers(&headers, body, now)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let body = body_at(1_000_000);
        let verified = verify(&sign(SECRET, &body), &body, 1000).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "del-1");
        assert_eq!(event.event_type.as_deref(), Some("Issue.create"));
        assert_eq!(event.object_id.as_deref(), Some("iss-1"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        assert_eq!(verified.diagnosis().signed_at, Some(1000));
    }

    #[test]
    fn header_type_is_the_fallback() {
        let body = br#"{"webhookTimestamp":1000000,"data":{}}"#;
        let verified = verify(&sign(SECRET, body), body, 1000).unwrap();
        assert_eq!(
            verified.event().unwrap().event_type.as_deref(),
            Some("Issue")
        );
    }

    #[test]
    fn sixty_second_window_both_directions() {
        let at = |millis: i64| {
            let body = body_at(millis);
            verify(&sign(SECRET, &body), &body, 1000).map(|_| ())
        };
        assert!(at(940_000).is_ok());
        assert!(at(1_060_999).is_ok());
        assert_eq!(at(939_999).unwrap_err(), Reason::Timestamp);
        assert_eq!(at(1_061_000).unwrap_err(), Reason::Timestamp);
    }

    #[test]
    fn refusals() {
        let body = body_at(1_000_000);
        let good = sign(SECRET, &body);
        let mut tampered = body.clone();
        tampered[12] ^= 1;
        assert_eq!(
            verify(&good, &tampered, 1000).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&sign("other", &body), &body, 1000).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify("xyz", &body, 1000).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify("", &body, 1000).unwrap_err(),
            Reason::MissingSignature
        );
        for no_timestamp in [
            &br#"{"webhookTimestamp":"1000000"}"#[..],
            br#"{"webhookTimestamp":1000000.5}"#,
            br#"{"webhookTimestamp":-1}"#,
            br#"{"data":{}}"#,
        ] {
            assert_eq!(
                verify(&sign(SECRET, no_timestamp), no_timestamp, 1000).unwrap_err(),
                Reason::Timestamp
            );
        }
        assert_eq!(
            verify(&sign(SECRET, b"not json"), b"not json", 1000).unwrap_err(),
            Reason::MalformedBody
        );
    }

    #[test]
    fn the_unsigned_timestamp_header_is_ignored() {
        let body = body_at(0);
        let signature = sign(SECRET, &body);
        let headers = [
            ("Linear-Signature", signature.as_str()),
            ("Linear-Delivery", "del-1"),
            ("Linear-Timestamp", "1000000"),
        ];
        assert_eq!(
            verify_headers(&headers, &body, 1000).unwrap_err(),
            Reason::Timestamp
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            text in any::<String>(),
            millis in 0u64..4_000_000_000_000,
            secret in "[A-Za-z0-9_]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(
                &serde_json::json!({"webhookTimestamp": millis, "data": {"text": text}}),
            )
            .unwrap();
            let signed = Signed::in_header(
                Box::new(Linear), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
