//! `paddle` — Paddle Billing notification signatures.
//!
//! Follows Paddle's "Verify webhook signatures" guide
//! (developer.paddle.com/webhooks/signature-verification) and the SDK helpers
//! it documents (five-second default tolerance). Paddle Classic's
//! `p_signature` (RSA over PHP-serialised fields) is a different product and
//! is not accepted here.
//!
//! - Header: `Paddle-Signature: ts=<unix seconds>;h1=<hex>[;h1=<hex>…]`.
//!   Several `h1` entries appear while a destination's secret rotates; any one
//!   may match. Other keys are ignored (future schemes).
//! - Signed bytes: `"{ts}:{raw body}"`, HMAC-SHA256 keyed with the
//!   notification destination's secret (`pdl_ntfset_…`) as UTF-8 bytes.
//! - Tolerance: 5 s in both directions (the SDKs' default), configurable per
//!   endpoint. `ts` is part of the signed bytes, so it cannot be refreshed.
//! - Event id: body `event_id` (`evt_…`). A notification is retried with the
//!   same payload, so the id is stable across retries and across manual
//!   replays of the notification.
//! - Type: `event_type`. Object id: `data.id`. Created: `occurred_at`
//!   (RFC 3339). Paddle gives no object version.
//! - Redelivery window: live accounts retry up to 60 times over 3 days
//!   (sandbox: 3 times within 15 minutes).

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature::hmac_sha256;
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureList, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

/// `ts=<unix seconds>` and hex HMAC-SHA256 `h1` signatures of `"{ts}:{body}"`.
const SIGNATURE: SignatureList<'static> = SignatureList {
    name: "Paddle-Signature",
    separator: ';',
    timestamp_key: "ts",
    signature_key: "h1",
    algorithm: Algorithm::HmacSha256,
};

#[derive(Debug, Default)]
pub struct Paddle;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Paddle))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Paddle Billing",
    docs_url: "https://developer.paddle.com/webhooks/signature-verification",
    scheme: "HMAC-SHA256, hex, `Paddle-Signature: ts=…;h1=…`",
    signed_parts: "`{ts}:{body}`",
    id_source: "body `event_id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("paddle-python-sdk (PyPI)"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Paddle {
    fn name(&self) -> &'static str {
        "paddle"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(5)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3 * 24 * 3600
    }

    /// HMAC over `ts` and the body, which holds the id and the type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let listed = SIGNATURE.read(request.headers)?;
        let timestamp = match listed.timestamps[..] {
            [timestamp] => timestamp,
            [] => return Err(Refusal::malformed_signature("Paddle-Signature has no `ts`")),
            _ => {
                return Err(Refusal::malformed_signature(
                    "Paddle-Signature has more than one `ts`",
                ))
            }
        };
        if listed.candidates.is_empty() {
            return Err(Refusal::malformed_signature(
                "Paddle-Signature has no `h1` signature",
            ));
        }
        Ok(SignatureClaim {
            timestamp: Some(timestamp),
            message: SignedMessage::new()
                .owned(format!("{timestamp}:"))
                .borrowed(request.body),
            candidates: listed.candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let event = envelope::required_id_at(&body, "/event_id")?
            .event_type(envelope::string_at(&body, "/event_type"))
            .object_id(envelope::string_at(&body, "/data/id"))
            .created_at(envelope::rfc3339_at(&body, "/occurred_at"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = String::from_utf8_lossy(crate::signer::shared_secret(&key)?).into_owned();
        Ok(crate::signer::SignedRequest::json(outgoing.body).header(
            "Paddle-Signature",
            sign(&secret, outgoing.now, outgoing.body),
        ))
    }
}

/// Signs a body the way Paddle does and returns the whole `Paddle-Signature`
/// header value. Used by tests and load generators.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mac = hmac_sha256(
        secret.as_bytes(),
        &[format!("{timestamp}:").as_bytes(), body],
    );
    format!("ts={timestamp};h1={}", hex::encode(mac))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "pdl_ntfset_test";
    const BODY: &[u8] = br#"{"event_id":"evt_1","event_type":"transaction.completed","occurred_at":"2023-11-14T22:13:20Z","data":{"id":"txn_1"}}"#;

    fn headers(value: &str) -> Headers {
        [("Paddle-Signature", value)].into_iter().collect()
    }

    fn verify_headers(headers: &Headers, body: &[u8], now: i64) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Paddle), SECRET);
        test_support::verify(&verifier, headers, body, now)
    }

    fn verify(header: &str, body: &[u8], now: i64) -> Result<Verified, Reason> {
        verify_headers(&headers(header), body, now)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, 1000, BODY), BODY, 1000).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "evt_1");
        assert_eq!(event.event_type.as_deref(), Some("transaction.completed"));
        assert_eq!(event.object_id.as_deref(), Some("txn_1"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn any_h1_may_match() {
        let good = sign(SECRET, 1000, BODY);
        let rotated = format!("{good};h1={}", "00".repeat(32));
        assert!(verify(&rotated, BODY, 1000).is_ok());
        let other_first = format!("ts=1000;h1={};{}", "00".repeat(32), &good[8..]);
        assert!(verify(&other_first, BODY, 1000).is_ok());
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, 1000, BODY);
        let mut tampered = BODY.to_vec();
        tampered[3] ^= 1;
        assert_eq!(
            verify(&good, &tampered, 1000).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&sign("other", 1000, BODY), BODY, 1000).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_headers(&Headers::new(), BODY, 1000).unwrap_err(),
            Reason::MissingSignature
        );
        for malformed in [
            "h1=00",
            "ts=1000",
            "ts=1000;h1=zz",
            "ts=10.5;h1=00",
            "ts=1000;ts=1000;h1=00",
            "garbage",
        ] {
            assert_eq!(
                verify(malformed, BODY, 1000).unwrap_err(),
                Reason::MalformedSignature,
                "{malformed}"
            );
        }
        let body = br#"{"event_type":"x"}"#;
        assert_eq!(
            verify(&sign(SECRET, 1000, body), body, 1000).unwrap_err(),
            Reason::MissingEventId
        );
    }

    #[test]
    fn five_second_window_both_directions() {
        test_support::assert_window(1000, 5, |ts| verify(&sign(SECRET, ts, BODY), BODY, 1000));
    }

    /// A request signed at `ts`, its `h1` signature decoded.
    fn signed(secret: &str, ts: i64, body: &[u8]) -> Signed {
        let header = sign(secret, ts, body);
        let (_, h1) = header.split_once(";h1=").unwrap();
        Signed {
            adapter: Box::new(Paddle),
            key: Paddle.parse_key(secret).unwrap(),
            signature: hex::decode(h1).unwrap(),
            headers: Box::new(move |h1| headers(&format!("ts={ts};h1={}", hex::encode(h1)))),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in proptest::collection::vec(any::<u8>(), 1..256),
            secret in "[A-Za-z0-9_]{1,40}",
            ts in 0i64..4_000_000_000,
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed_at_ts = signed(&secret, ts, &body);
            test_support::check_single_byte_changes(&signed_at_ts, &body, at, flip)?;

            // `ts` is signed: the same signature under the next second fails.
            let shifted = Signed { headers: signed(&secret, ts + 1, &body).headers, ..signed_at_ts };
            prop_assert_eq!(shifted.verifies(&shifted.signature, &body), Ok(false));
        }
    }
}
