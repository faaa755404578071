//! `orb` — Orb webhook signatures (`X-Orb-Signature`, `X-Orb-Timestamp`).
//!
//! Follows Orb's "Webhooks" guide (docs.withorb.com/guides/integrations-and-exports/webhooks,
//! "Verifying webhooks") and the official `orb-billing` SDK's
//! `webhooks.verify_signature` (PyPI; `orb-billing` on npm does the same).
//!
//! - Headers: `X-Orb-Signature` (space-separated `v1=<hex>` items; items of
//!   other versions are ignored) and `X-Orb-Timestamp` (ISO 8601; a time
//!   without an offset is UTC, as the SDK reads it).
//! - Signed bytes: `"v1:{X-Orb-Timestamp}:{raw body}"`, the timestamp as sent.
//!   HMAC-SHA256 keyed with the endpoint's signing secret as UTF-8 bytes.
//! - Tolerance: 300 s in both directions, the SDK's `webhook_tolerance`. A
//!   timestamp that is not ISO 8601 is a `timestamp` refusal.
//! - Event id: body `id` (signed). Type: `type` (`subscription.started`).
//!   Created: `created_at` (RFC 3339). No object id or version is claimed.
//! - Redelivery window: Orb retries failed deliveries with backoff but does not
//!   publish how long; three days are kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    Adapter, Algorithm, BodyCoverage, Candidate, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, SignedMessage,
};

/// One `v1=<hex>` item of the signature header.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Orb-Signature", Algorithm::HmacSha256).with_prefix("v1=");

/// The header carrying the signed timestamp.
const TIMESTAMP: &str = "X-Orb-Timestamp";

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Orb",
    docs_url: "https://docs.withorb.com/guides/integrations-and-exports/webhooks",
    scheme: "HMAC-SHA256, hex, `X-Orb-Signature: v1=…`",
    signed_parts: "`v1:{X-Orb-Timestamp}:{body}`",
    id_source: "body `id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("orb-billing (PyPI)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Orb;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Orb))
}

impl Adapter for Orb {
    fn name(&self) -> &'static str {
        "orb"
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
        let seconds = iso8601_seconds(timestamp)
            .ok_or_else(|| Refusal::timestamp("X-Orb-Timestamp is not an ISO 8601 time"))?;
        Ok(SignatureClaim {
            timestamp: Some(seconds),
            message: SignedMessage::new()
                .owned(signed_prefix(timestamp))
                .borrowed(request.body),
            candidates: candidates(value)?,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let id = envelope::string_at(&body, "/id")
            .ok_or_else(|| Refusal::missing_event_id("no event id at `/id` in the body"))?;
        let event = Envelope::with_id(id)?
            .event_type(envelope::string_at(&body, "/type"))
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
        let timestamp = format!("{}.000000", crate::signer::utc_date_time(outgoing.now)?);
        let signature = SIGNATURE.sign_hmac(
            secret,
            &[signed_prefix(&timestamp).as_bytes(), outgoing.body],
        );
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(TIMESTAMP, timestamp)
            .header(SIGNATURE.name, signature))
    }
}

/// The `v1` signatures of the space-separated items, several while a secret
/// rotates; items of other versions are ignored. A header with no `v1`
/// item, or none that decodes, is `malformed_signature`.
fn candidates(value: &str) -> Result<Vec<Candidate>, Refusal> {
    let items: Vec<&str> = value
        .split(' ')
        .filter(|item| item.starts_with("v1="))
        .collect();
    let decoded: Vec<Candidate> = items
        .iter()
        .filter_map(|item| SIGNATURE.decode(item).ok())
        .collect();
    if decoded.is_empty() {
        return Err(Refusal::malformed_signature(
            "X-Orb-Signature has no hex `v1=` item",
        ));
    }
    Ok(decoded)
}

/// An ISO 8601 time as unix seconds: RFC 3339, or a date and time without
/// an offset, which Orb's SDK reads as UTC. Fractions are dropped.
fn iso8601_seconds(text: &str) -> Option<i64> {
    use time::format_description::well_known::Iso8601;
    envelope::rfc3339_seconds(text).or_else(|| {
        time::PrimitiveDateTime::parse(text, &Iso8601::DEFAULT)
            .ok()
            .map(|naive| naive.assume_utc().unix_timestamp())
    })
}

/// What Orb signs before the body, from the timestamp header as sent.
fn signed_prefix(timestamp: &str) -> String {
    format!("v1:{timestamp}:")
}

/// Signs a body the way Orb does, for the timestamp header value
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

    const SECRET: &str = "orb-signing-secret";
    const BODY: &[u8] = br#"{"id":"uMWHm3wkzpjSxrUn","created_at":"2023-11-14T22:13:20+00:00","type":"subscription.started","properties":{},"subscription":{"id":"sub_1"}}"#;
    const NOW: i64 = 1_700_000_000;
    const OTHER_HEADERS: &[(&str, &str)] = &[];

    fn verify_at(
        signature: Option<&str>,
        timestamp: &str,
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Orb), SECRET);
        let mut headers: Headers = OTHER_HEADERS.iter().copied().collect();
        headers.append(TIMESTAMP, timestamp);
        if let Some(signature) = signature {
            headers.append(SIGNATURE.name, signature);
        }
        test_support::verify(&verifier, &headers, body, NOW)
    }

    fn signed_at(seconds: i64, body: &[u8]) -> Result<Verified, Reason> {
        let timestamp = iso(seconds);
        verify_at(Some(&sign(SECRET, &timestamp, body)), &timestamp, body)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = signed_at(NOW - 5, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "uMWHm3wkzpjSxrUn");
        assert_eq!(event.event_type.as_deref(), Some("subscription.started"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        assert_eq!(verified.diagnosis().signed_at, Some(NOW - 5));
    }

    #[test]
    fn tolerance_window_both_directions() {
        test_support::assert_window(NOW, 300, |at| signed_at(at, BODY));
    }

    #[test]
    fn refusals() {
        let timestamp = iso(NOW);
        let good = sign(SECRET, &timestamp, BODY);
        let mut tampered = BODY.to_vec();
        tampered[10] ^= 1;
        assert_eq!(
            verify_at(Some(&good), &timestamp, &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_at(Some(&good), &iso(NOW - 1), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_at(None, &timestamp, BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify_at(Some("v1=not-hex"), &timestamp, BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify_at(Some(&good), "yesterday", BODY).unwrap_err(),
            Reason::Timestamp
        );
        let no_id = br#"{"type":"subscription.started"}"#;
        assert_eq!(
            verify_at(Some(&sign(SECRET, &timestamp, no_id)), &timestamp, no_id).unwrap_err(),
            Reason::MissingEventId
        );
    }

    /// A naive ISO 8601 time, as Orb sends it.
    fn iso(seconds: i64) -> String {
        let at = time::OffsetDateTime::from_unix_timestamp(seconds).unwrap();
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.123456",
            at.year(),
            u8::from(at.month()),
            at.day(),
            at.hour(),
            at.minute(),
            at.second()
        )
    }

    #[test]
    fn timestamps_with_and_without_offsets() {
        assert_eq!(iso8601_seconds("2023-11-14T22:13:20"), Some(1_700_000_000));
        assert_eq!(
            iso8601_seconds("2023-11-14T22:13:20.5"),
            Some(1_700_000_000)
        );
        assert_eq!(
            iso8601_seconds("2023-11-15T00:13:20+02:00"),
            Some(1_700_000_000)
        );
        assert_eq!(iso8601_seconds("2023-11-14T22:13:20Z"), Some(1_700_000_000));
        assert_eq!(iso8601_seconds("1700000000"), None);
    }

    #[test]
    fn any_v1_item_may_match_and_others_are_ignored() {
        let timestamp = iso(NOW);
        let good = sign(SECRET, &timestamp, BODY);
        let rotated = format!("v0=00 {} {good}", sign("old", &timestamp, BODY));
        assert!(verify_at(Some(&rotated), &timestamp, BODY).is_ok());
        assert_eq!(
            verify_at(Some("v0=00"), &timestamp, BODY).unwrap_err(),
            Reason::MalformedSignature
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
            let timestamp = iso(seconds);
            let signed = Signed::in_header(
                Box::new(Orb),
                &secret,
                SIGNATURE,
                &sign(&secret, &timestamp, &body),
                &[(TIMESTAMP, &timestamp)],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
