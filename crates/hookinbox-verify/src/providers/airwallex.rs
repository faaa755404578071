//! `airwallex` — Airwallex webhook signatures (`x-signature`, `x-timestamp`).
//!
//! Follows Airwallex's "Listen for webhook events" and "Webhooks overview"
//! pages (airwallex.com/docs/developer-tools/webhooks): the signature is the
//! HMAC-SHA256 hex digest of the timestamp followed by the body, keyed with
//! the webhook's secret.
//!
//! - Headers: `x-signature` (hex) and `x-timestamp` (integer unix
//!   *milliseconds*, e.g. `1357872222592`).
//! - Signed bytes: `"{x-timestamp}{raw body}"` — the timestamp header exactly
//!   as sent, then the body, no separator. HMAC-SHA256 keyed with the
//!   notification URL's secret as UTF-8 bytes.
//! - Tolerance: Airwallex mandates none and tells receivers to reject stale
//!   timestamps; hookinbox applies 300 s in both directions (milliseconds
//!   floored to seconds, so the future edge is up to 999 ms more lenient).
//! - Event id: body `id`, documented as unchanged for the same event across
//!   retries. Type: `name` (`payment_intent.succeeded`). Object id:
//!   `data.object.id`. Created: `created_at` when RFC 3339. No object version.
//! - Redelivery window: retries with exponential back-off over about three
//!   days; events can also be re-triggered from the web app. Three days are
//!   kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    encoding, Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, SignedMessage,
};

/// Hex HMAC-SHA256 of the timestamp and the body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("x-signature", Algorithm::HmacSha256);

/// The header carrying the signed timestamp.
const TIMESTAMP: &str = "x-timestamp";

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Airwallex",
    docs_url: "https://www.airwallex.com/docs/developer-tools/webhooks/listen-for-webhook-events",
    scheme: "HMAC-SHA256, hex, `x-signature`",
    signed_parts: "`{x-timestamp}{body}` (milliseconds)",
    id_source: "body `id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Airwallex;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Airwallex))
}

impl Adapter for Airwallex {
    fn name(&self) -> &'static str {
        "airwallex"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3 * 24 * 3600
    }

    /// HMAC over the timestamp and the body, which holds the event's id and name.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: true,
            event_type: true,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let value = SIGNATURE.value(request.headers)?;
        let timestamp = required(request.headers, TIMESTAMP)?;
        let seconds = encoding::unix_millis_as_seconds(timestamp, TIMESTAMP)?;
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
        let id = envelope::string_at(&body, "/id")
            .ok_or_else(|| Refusal::missing_event_id("no event id at `/id` in the body"))?;
        let event = Envelope::with_id(id)?
            .event_type(envelope::string_at(&body, "/name"))
            .object_id(envelope::string_at(&body, "/data/object/id"))
            .created_at(envelope::rfc3339_at(&body, "/created_at"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let timestamp = (outgoing.now * 1000).to_string();
        let signature = SIGNATURE.sign_hmac(
            secret,
            &[signed_prefix(&timestamp).as_bytes(), outgoing.body],
        );
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(TIMESTAMP, timestamp)
            .header(SIGNATURE.name, signature))
    }
}

/// What Airwallex signs before the body, from the timestamp header as sent.
fn signed_prefix(timestamp: &str) -> String {
    timestamp.to_owned()
}

/// Signs a body the way Airwallex does, for the timestamp header value
/// `timestamp`. Used by tests and load generators.
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(
        secret.as_bytes(),
        &[signed_prefix(timestamp).as_bytes(), body],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "awx-webhook-secret";
    const BODY: &[u8] = br#"{"id":"evt_hkpdrp5xyg27zvl1o8rk","name":"payment_intent.succeeded","account_id":"acct_1","data":{"object":{"id":"int_hkdmr6fnqg2bdcp5b8u","amount":42}},"created_at":"2023-11-14T22:13:15Z"}"#;
    const NOW: i64 = 1_700_000_000;
    const OTHER_HEADERS: &[(&str, &str)] = &[];

    fn verify_at(
        signature: Option<&str>,
        timestamp: &str,
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Airwallex), SECRET);
        let mut headers: Headers = OTHER_HEADERS.iter().copied().collect();
        headers.append(TIMESTAMP, timestamp);
        if let Some(signature) = signature {
            headers.append(SIGNATURE.name, signature);
        }
        test_support::verify(&verifier, &headers, body, NOW)
    }

    fn signed_at(seconds: i64, body: &[u8]) -> Result<Verified, Reason> {
        let timestamp = (seconds * 1000).to_string();
        verify_at(Some(&sign(SECRET, &timestamp, body)), &timestamp, body)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = signed_at(NOW - 5, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "evt_hkpdrp5xyg27zvl1o8rk");
        assert_eq!(
            event.event_type.as_deref(),
            Some("payment_intent.succeeded")
        );
        assert_eq!(event.object_id.as_deref(), Some("int_hkdmr6fnqg2bdcp5b8u"));
        assert_eq!(event.created_at, Some(1_699_999_995));
        assert_eq!(verified.diagnosis().signed_at, Some(NOW - 5));
    }

    #[test]
    fn tolerance_window_both_directions() {
        test_support::assert_window(NOW, 300, |at| signed_at(at, BODY));
    }

    #[test]
    fn refusals() {
        let timestamp = (NOW * 1000).to_string();
        let good = sign(SECRET, &timestamp, BODY);
        let mut tampered = BODY.to_vec();
        tampered[10] ^= 1;
        assert_eq!(
            verify_at(Some(&good), &timestamp, &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_at(Some(&good), &((NOW - 1) * 1000).to_string(), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_at(None, &timestamp, BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify_at(Some("not-hex"), &timestamp, BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify_at(Some(&good), "1700000000000.5", BODY).unwrap_err(),
            Reason::Timestamp
        );
        let no_id = br#"{"name":"payment_intent.succeeded"}"#;
        assert_eq!(
            verify_at(Some(&sign(SECRET, &timestamp, no_id)), &timestamp, no_id).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in prop::collection::vec(any::<u8>(), 1..256),
            secret in "[A-Za-z0-9_-]{1,40}",
            seconds in 0i64..4_000_000_000,
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let timestamp = (seconds * 1000).to_string();
            let signed = Signed::in_header(
                Box::new(Airwallex),
                &secret,
                SIGNATURE,
                &sign(&secret, &timestamp, &body),
                &[(TIMESTAMP, &timestamp)],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
