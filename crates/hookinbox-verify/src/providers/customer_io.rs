//! `customer_io` — Customer.io reporting webhook signatures (`X-CIO-Signature`).
//!
//! Follows Customer.io's "Reporting Webhooks" API page
//! (docs.customer.io/api/webhooks, "Securely verify requests"): HMAC-SHA256
//! keyed with the webhook signing key over `v0:{X-CIO-Timestamp}:{body}`.
//!
//! - Headers: `X-CIO-Signature` (hex) and `X-CIO-Timestamp` (integer unix
//!   seconds).
//! - Signed bytes: `"v0:{X-CIO-Timestamp}:{raw body}"`, the timestamp as sent.
//!   HMAC-SHA256 keyed with the webhook signing key (Reporting Webhooks
//!   settings) as UTF-8 bytes.
//! - Tolerance: Customer.io asks receivers to check that the timestamp is
//!   recent without naming a window; hookinbox applies 300 s in both
//!   directions.
//! - Event id: body `event_id` (signed). Type: `"{object_type}.{metric}"`
//!   (`email.opened`). Object id: `data.delivery_id` when present. Created:
//!   `timestamp` (unix seconds). No object version.
//! - Redelivery window: a failed call is retried with exponential back-off
//!   over seven days. Seven days are kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    encoding, Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, SignedMessage,
};

/// Hex HMAC-SHA256 of `v0:{timestamp}:{body}`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-CIO-Signature", Algorithm::HmacSha256);

/// The header carrying the signed timestamp.
const TIMESTAMP: &str = "X-CIO-Timestamp";

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Customer.io",
    docs_url: "https://docs.customer.io/api/webhooks/",
    scheme: "HMAC-SHA256, hex, `X-CIO-Signature`",
    signed_parts: "`v0:{X-CIO-Timestamp}:{body}`",
    id_source: "body `event_id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct CustomerIo;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(CustomerIo))
}

impl Adapter for CustomerIo {
    fn name(&self) -> &'static str {
        "customer_io"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        7 * 24 * 3600
    }

    /// HMAC over the timestamp and the body, which holds the event's id and type.
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
        let id = envelope::string_at(&body, "/event_id")
            .ok_or_else(|| Refusal::missing_event_id("no event id at `/event_id` in the body"))?;
        let event_type = match (
            envelope::string_at(&body, "/object_type"),
            envelope::string_at(&body, "/metric"),
        ) {
            (Some(object), Some(metric)) => Some(format!("{object}.{metric}")),
            (_, metric) => metric,
        };
        let event = Envelope::with_id(id)?
            .event_type(event_type)
            .object_id(envelope::string_at(&body, "/data/delivery_id"))
            .created_at(envelope::integer_at(&body, "/timestamp"));
        Ok(Outcome::Event(event))
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
            &[signed_prefix(&timestamp).as_bytes(), outgoing.body],
        );
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(TIMESTAMP, timestamp)
            .header(SIGNATURE.name, signature))
    }
}

/// What Customer.io signs before the body, from the timestamp header as sent.
fn signed_prefix(timestamp: &str) -> String {
    format!("v0:{timestamp}:")
}

/// Signs a body the way Customer.io does, for the timestamp header value
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

    const SECRET: &str = "cio-signing-key";
    const BODY: &[u8] = br#"{"event_id":"01E4C4CT6YDC7Y5M7FE1GWWPQJ","object_type":"email","metric":"opened","timestamp":1699999990,"data":{"delivery_id":"RPILAgABcRhIBqSp7kiPekGBIeVh","customer_id":"42"}}"#;
    const NOW: i64 = 1_700_000_000;
    const OTHER_HEADERS: &[(&str, &str)] = &[];

    fn verify_at(
        signature: Option<&str>,
        timestamp: &str,
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(CustomerIo), SECRET);
        let mut headers: Headers = OTHER_HEADERS.iter().copied().collect();
        headers.append(TIMESTAMP, timestamp);
        if let Some(signature) = signature {
            headers.append(SIGNATURE.name, signature);
        }
        test_support::verify(&verifier, &headers, body, NOW)
    }

    fn signed_at(seconds: i64, body: &[u8]) -> Result<Verified, Reason> {
        let timestamp = seconds.to_string();
        verify_at(Some(&sign(SECRET, &timestamp, body)), &timestamp, body)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = signed_at(NOW - 5, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "01E4C4CT6YDC7Y5M7FE1GWWPQJ");
        assert_eq!(event.event_type.as_deref(), Some("email.opened"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("RPILAgABcRhIBqSp7kiPekGBIeVh")
        );
        assert_eq!(event.created_at, Some(1_699_999_990));
        assert_eq!(verified.diagnosis().signed_at, Some(NOW - 5));
    }

    #[test]
    fn tolerance_window_both_directions() {
        test_support::assert_window(NOW, 300, |at| signed_at(at, BODY));
    }

    #[test]
    fn refusals() {
        let timestamp = NOW.to_string();
        let good = sign(SECRET, &timestamp, BODY);
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
            verify_at(Some("not-hex"), &timestamp, BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify_at(Some(&good), "1700000000.0", BODY).unwrap_err(),
            Reason::Timestamp
        );
        let no_id = br#"{"metric":"opened"}"#;
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
            let timestamp = seconds.to_string();
            let signed = Signed::in_header(
                Box::new(CustomerIo),
                &secret,
                SIGNATURE,
                &sign(&secret, &timestamp, &body),
                &[(TIMESTAMP, &timestamp)],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
