//! `mailgun` — Mailgun webhook signatures (JSON event webhooks).
//!
//! Follows Mailgun's "Securing Webhooks", "Webhook Payloads" and "Automatic
//! Retries" pages (documentation.mailgun.com/docs/mailgun/user-manual/webhooks).
//!
//! - Where: not in a header but inside the JSON body, an object
//!   `"signature": {"timestamp": "…", "token": "…", "signature": "<hex>"}`,
//!   plus `"parent-signature"` for events of a subaccount, signed with the
//!   parent account's key (either may match a configured key). The body is
//!   therefore parsed before verification, to read this object and nothing
//!   else. Not JSON: `malformed_body`; no signature object or no `signature`
//!   field: `missing_signature`; a timestamp that is not integer seconds, an
//!   empty token or a non-hex signature: `malformed_signature`. Legacy
//!   form-encoded webhooks and inbound routes are not handled here.
//! - Signed bytes: `"{timestamp}{token}"` (no separator, the texts as sent),
//!   HMAC-SHA256 keyed with the HTTP webhook signing key as UTF-8 bytes, hex.
//!   **The signature does not cover `event-data`**: a valid signature block
//!   proves Mailgun issued that token at that time, not that the event data
//!   beside it is Mailgun's. The event id below makes one token admit one
//!   body (a second body under a token already stored is a conflict, 409),
//!   but it does not stop a token this endpoint never saw: the signing key is
//!   the account's, so every webhook the account sends — to any URL, any
//!   service the account feeds — carries a valid block, and whoever receives
//!   one can attach any body to it and post it here within the 9-hour
//!   tolerance. So the adapter declares the body unsigned
//!   ([`BodyCoverage::Unsigned`]) and hookinbox refuses to start a Mailgun
//!   endpoint without `basic_auth`: credentials that only this endpoint's
//!   webhook URL carries (`https://user:password@host/hooks/…`, which Mailgun
//!   sends as HTTP basic auth).
//! - Tolerance: 9 hours in both directions. Mailgun suggests a freshness check
//!   but warns against an aggressive one, and retries resend the original
//!   signature block — timestamp included (Mailgun's docs are silent on this;
//!   Hookdeck's Mailgun reference states it, and retries arriving hours late
//!   with old timestamps match it). Retries run for about 8 hours, so a
//!   shorter window would refuse Mailgun's own retries and lose events.
//! - Event id: `signature.token`, a 50-character random string that is signed
//!   and repeated on retries of one delivery (see above). `event-data.id` is
//!   only "unique within a day" and unsigned, so it is not used.
//! - Type: `event-data.event` (`delivered`, `failed`, …). Object id: the
//!   message's `event-data.message.headers.message-id`. Created:
//!   `event-data.timestamp` (float seconds, truncated). No object version.
//! - Redelivery window: retries after 5 min, 10 min, 15 min, 1 h, 2 h and 4 h
//!   (about 8 hours; delivery notifications are not retried). 24 hours are
//!   kept, more than the tolerance, so a token replayed inside the tolerance
//!   always meets its dedup record.

use crate::encoding;
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature::hmac_sha256;
use crate::{
    Adapter, Algorithm, BodyCoverage, Candidate, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

#[derive(Debug, Default)]
pub struct Mailgun;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Mailgun))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Mailgun",
    docs_url: "https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks",
    scheme: "HMAC-SHA256, hex, in the body: `signature.signature`",
    signed_parts: "`{signature.timestamp}{signature.token}`: none of the event data, so `basic_auth` is required",
    id_source: "body `signature.token`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython("crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Mailgun {
    fn name(&self) -> &'static str {
        "mailgun"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(9 * 3600)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// The signature covers the timestamp and the token (the id) only, not
    /// `event-data`, where the type is.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Unsigned,
            event_id: true,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let body: serde_json::Value = serde_json::from_slice(request.body).map_err(|_| {
            Refusal::malformed_body("the body is not JSON, so it carries no Mailgun signature")
        })?;
        let block = signature_block(&body)?;
        let mut candidates = vec![Candidate::new(Algorithm::HmacSha256, block.signature)];
        if let Some(parent) = block.parent_signature {
            candidates.push(Candidate::new(Algorithm::HmacSha256, parent));
        }
        Ok(SignatureClaim {
            timestamp: Some(block.timestamp),
            message: SignedMessage::new().owned(format!("{}{}", block.timestamp_text, block.token)),
            candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let token = envelope::string_at(&body, "/signature/token")
            .ok_or_else(|| Refusal::missing_event_id("no signature.token in the body"))?;
        let created_at = body
            .pointer("/event-data/timestamp")
            .and_then(serde_json::Value::as_f64)
            .filter(|seconds| seconds.is_finite())
            .map(|seconds| seconds as i64);
        let event = Envelope::with_id(token)?
            .event_type(envelope::string_at(&body, "/event-data/event"))
            .object_id(envelope::string_at(
                &body,
                "/event-data/message/headers/message-id",
            ))
            .created_at(created_at);
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        // The signature block travels in the body: Mailgun writes it beside
        // `event-data`, with the token as the event id.
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let mut body: serde_json::Value = serde_json::from_slice(outgoing.body)
            .ok()
            .filter(serde_json::Value::is_object)
            .ok_or(crate::signer::SignError::Body {
                provider: "mailgun",
                reason: "not a JSON object with `event-data`".into(),
            })?;
        let timestamp = outgoing.now.to_string();
        let token = outgoing.event_id;
        let signature = hex::encode(hmac_sha256(
            secret,
            &[timestamp.as_bytes(), token.as_bytes()],
        ));
        body["signature"] = serde_json::json!({
            "timestamp": timestamp,
            "token": token,
            "signature": signature,
        });
        let body = serde_json::to_vec(&body).map_err(|error| crate::signer::SignError::Body {
            provider: self.name(),
            reason: error.to_string(),
        })?;
        Ok(crate::signer::SignedRequest::json(&body))
    }
}

/// The signature object of a Mailgun body, decoded.
struct SignatureBlock {
    timestamp: i64,
    /// The timestamp exactly as sent: it is what Mailgun signed.
    timestamp_text: String,
    token: String,
    signature: Vec<u8>,
    parent_signature: Option<Vec<u8>>,
}

fn signature_block(body: &serde_json::Value) -> Result<SignatureBlock, Refusal> {
    let block = body
        .get("signature")
        .filter(|block| block.is_object())
        .ok_or_else(|| Refusal::missing_signature("the body has no signature object"))?;
    let signature = match block.get("signature") {
        Some(serde_json::Value::String(text)) if !text.trim().is_empty() => text,
        Some(_) => {
            return Err(Refusal::malformed_signature(
                "signature.signature is not a string",
            ))
        }
        None => return Err(Refusal::missing_signature("no signature.signature")),
    };
    let signature = encoding::hex_signature(signature)
        .ok_or_else(|| Refusal::malformed_signature("signature.signature is not hex"))?;
    let timestamp_text = match block.get("timestamp") {
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(serde_json::Value::Number(number)) => number.to_string(),
        _ => {
            return Err(Refusal::malformed_signature(
                "signature.timestamp is missing or not a value",
            ))
        }
    };
    let timestamp = encoding::unix_seconds(&timestamp_text, "signature.timestamp")
        .map_err(|_| Refusal::malformed_signature("signature.timestamp is not integer seconds"))?;
    let token = block
        .get("token")
        .and_then(serde_json::Value::as_str)
        .filter(|token| !token.is_empty())
        .ok_or_else(|| Refusal::malformed_signature("signature.token is missing or empty"))?
        .to_owned();
    let parent_signature = block
        .get("parent-signature")
        .and_then(serde_json::Value::as_str)
        .and_then(encoding::hex_signature);
    Ok(SignatureBlock {
        timestamp,
        timestamp_text,
        token,
        signature,
        parent_signature,
    })
}

/// Signs a timestamp and token the way Mailgun does: hex HMAC-SHA256 of
/// `"{timestamp}{token}"`. Used by tests and load generators.
pub fn sign(signing_key: &str, timestamp: &str, token: &str) -> String {
    let mac = hmac_sha256(
        signing_key.as_bytes(),
        &[timestamp.as_bytes(), token.as_bytes()],
    );
    hex::encode(mac)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;
    use serde_json::json;

    const KEY: &str = "mg-signing-key";
    const TOKEN: &str = "e0b5477167110d68991efc6b9f89f0a11066af27834600e123";

    fn body(signing_key: &str, timestamp: &str, token: &str, event: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "signature": {
                "timestamp": timestamp,
                "token": token,
                "signature": sign(signing_key, timestamp, token),
            },
            "event-data": {
                "event": event,
                "id": "CPgfbmQMTCKtHW6uIWtuVe",
                "timestamp": 1_700_000_000.372_891,
                "message": {"headers": {"message-id": "m1@example.com"}},
            },
        }))
        .unwrap()
    }

    fn verify(body: &[u8], now: i64) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Mailgun), KEY);
        test_support::verify(&verifier, &Headers::new(), body, now)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let body = body(KEY, "1700000000", TOKEN, "delivered");
        let verified = verify(&body, 1_700_000_000).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, TOKEN);
        assert_eq!(event.event_type.as_deref(), Some("delivered"));
        assert_eq!(event.object_id.as_deref(), Some("m1@example.com"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn the_parent_signature_of_a_subaccount_event_counts() {
        let mut value: serde_json::Value =
            serde_json::from_slice(&body("sub-key", "1700000000", TOKEN, "delivered")).unwrap();
        value["signature"]["parent-signature"] = json!(sign(KEY, "1700000000", TOKEN));
        let body = serde_json::to_vec(&value).unwrap();
        assert!(verify(&body, 1_700_000_000).is_ok());
    }

    #[test]
    fn nine_hour_window_both_directions() {
        let now = 1_700_000_000;
        test_support::assert_window(now, 9 * 3600, |ts| {
            verify(&body(KEY, &ts.to_string(), TOKEN, "failed"), now)
        });
    }

    #[test]
    fn refusals() {
        let now = 1_700_000_000;
        let good = body(KEY, "1700000000", TOKEN, "delivered");
        assert_eq!(
            verify(&body("other", "1700000000", TOKEN, "delivered"), now).unwrap_err(),
            Reason::Signature
        );
        let mut value: serde_json::Value = serde_json::from_slice(&good).unwrap();
        value["signature"]["token"] = json!(format!("{TOKEN}x"));
        assert_eq!(
            verify(&serde_json::to_vec(&value).unwrap(), now).unwrap_err(),
            Reason::Signature
        );
        let mut value: serde_json::Value = serde_json::from_slice(&good).unwrap();
        value["signature"]["timestamp"] = json!("1700000001");
        assert_eq!(
            verify(&serde_json::to_vec(&value).unwrap(), now).unwrap_err(),
            Reason::Signature
        );
        for (field, replacement) in [
            ("signature", json!("zz")),
            ("signature", json!(12)),
            ("timestamp", json!("1700000000.5")),
            ("timestamp", json!(null)),
            ("token", json!("")),
        ] {
            let mut value: serde_json::Value = serde_json::from_slice(&good).unwrap();
            value["signature"][field] = replacement;
            assert_eq!(
                verify(&serde_json::to_vec(&value).unwrap(), now).unwrap_err(),
                Reason::MalformedSignature,
                "{field}"
            );
        }
        let mut value: serde_json::Value = serde_json::from_slice(&good).unwrap();
        value["signature"]
            .as_object_mut()
            .unwrap()
            .remove("signature");
        assert_eq!(
            verify(&serde_json::to_vec(&value).unwrap(), now).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(br#"{"event-data":{}}"#, now).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(verify(b"token=x", now).unwrap_err(), Reason::MalformedBody);
    }

    #[test]
    fn event_data_is_not_covered_by_the_signature() {
        // Mailgun's scheme, stated as a test: the token, not the signature,
        // is what ties a body to one event.
        let now = 1_700_000_000;
        let original = verify(&body(KEY, "1700000000", TOKEN, "delivered"), now).unwrap();
        let swapped = verify(&body(KEY, "1700000000", TOKEN, "complained"), now).unwrap();
        assert_eq!(
            original.event().unwrap().event_id,
            swapped.event().unwrap().event_id
        );
    }

    fn signed(body: &[u8], key: &str) -> bool {
        let key = Mailgun.parse_key(key).unwrap();
        Mailgun
            .claim(&Request::new(&Headers::new(), body))
            .is_ok_and(|claim| claim.is_signed_by(&key))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        // What Mailgun signs is `timestamp + token`: any single-byte change
        // to the token or to the decoded signature fails.
        #[test]
        fn signed_tokens_verify_and_single_byte_changes_do_not(
            token in "[a-z0-9]{50}",
            ts in 0i64..4_000_000_000,
            key in "[A-Za-z0-9_-]{1,40}",
            at in any::<prop::sample::Index>(),
            replacement in "[A-Z]",
            flip in 1u8..=255,
        ) {
            let timestamp = ts.to_string();
            let good = body(&key, &timestamp, &token, "delivered");
            prop_assert!(signed(&good, &key));

            let mut changed: Vec<char> = token.chars().collect();
            let i = at.index(changed.len());
            changed[i] = replacement.chars().next().unwrap();
            let changed: String = changed.into_iter().collect();
            let mut value: serde_json::Value = serde_json::from_slice(&good).unwrap();
            value["signature"]["token"] = json!(changed);
            prop_assert!(!signed(&serde_json::to_vec(&value).unwrap(), &key));

            let mut raw = hex::decode(sign(&key, &timestamp, &token)).unwrap();
            let j = at.index(raw.len());
            raw[j] ^= flip;
            let mut value: serde_json::Value = serde_json::from_slice(&good).unwrap();
            value["signature"]["signature"] = json!(hex::encode(raw));
            prop_assert!(!signed(&serde_json::to_vec(&value).unwrap(), &key));
        }
    }
}
