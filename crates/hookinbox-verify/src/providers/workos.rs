//! `workos` — WorkOS webhooks (`WorkOS-Signature`).
//!
//! Follows WorkOS's "Webhooks" guide (workos.com/docs/events/data-syncing/
//! webhooks, "Validating events are from WorkOS") and its SDKs'
//! `Webhooks` modules (`@workos-inc/node`, `workos` on PyPI), whose
//! `compute_signature`/`verify_header` this adapter agrees with.
//!
//! - Header: `WorkOS-Signature: t=<unix milliseconds>, v1=<hex>` (a space
//!   after the comma). Signed bytes: `"{t}.{raw body}"` with `t` as sent
//!   (milliseconds), HMAC-SHA256 keyed with the endpoint's webhook secret
//!   exactly as the dashboard shows it, as UTF-8 bytes.
//! - Tolerance: 180 s in both directions, the SDKs' default
//!   (`DEFAULT_TOLERANCE = 180` seconds; 180000 ms in the Node SDK).
//! - Event id: body `id` (`event_01…`), the same on every retry of the
//!   event. Signed. Type: `event` (`dsync.user.created`). Object id:
//!   `data.id`. Created: `created_at` (RFC 3339). No object version.
//! - Redelivery window: WorkOS retries failed deliveries with back-off; the
//!   pages followed here give no span, so 3 days are kept, an assumption
//!   to revisit when WorkOS documents one.

use crate::dotted_timestamp::TimestampUnit;
use crate::envelope::JsonFields;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureList, VectorSource,
};

const SIGNATURE: SignatureList<'static> = SignatureList {
    name: "WorkOS-Signature",
    separator: ',',
    timestamp_key: "t",
    signature_key: "v1",
    algorithm: Algorithm::HmacSha256,
};

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "WorkOS",
    docs_url: "https://workos.com/docs/events/data-syncing/webhooks",
    scheme: "HMAC-SHA256, hex, `WorkOS-Signature: t=<ms>, v1=…`",
    signed_parts: "`{t}.{body}` (`t` in milliseconds)",
    id_source: "body `id` (`event_…`, signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("workos (PyPI)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct WorkOs;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(WorkOs))
}

impl Adapter for WorkOs {
    fn name(&self) -> &'static str {
        "workos"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(180)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3 * 24 * 3600
    }

    /// HMAC over the timestamp and the body, which holds the id and the event.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.dotted_timestamp_claim(request, TimestampUnit::Milliseconds)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(request.body, &["/id", "/event", "/data/id", "/created_at"])?;
        let event = body
            .required_id_at("/id")?
            .event_type(body.string_at("/event"))
            .object_id(body.string_at("/data/id"))
            .created_at(body.rfc3339_at("/created_at"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let millis = outgoing.now.saturating_mul(1000);
        Ok(crate::signer::SignedRequest::json(outgoing.body).header(
            SIGNATURE.name,
            SIGNATURE.dotted_timestamp_header(secret, millis, outgoing.body, ", "),
        ))
    }
}

/// The `WorkOS-Signature` value WorkOS sends for `body` at `millis`. Used
/// by tests.
pub fn sign(secret: &str, millis: i64, body: &[u8]) -> String {
    SIGNATURE.dotted_timestamp_header(secret.as_bytes(), millis, body, ", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, SignatureHeader, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "fixtureWorkOSWebhookSecret0001";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"id":"event_01HF0AZ4TQ7B1Z1K0QJ3V6G2XE","event":"dsync.user.created","data":{"id":"directory_user_01E1X1","object":"directory_user","state":"active"},"created_at":"2023-11-14T22:13:10.000Z"}"#;

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(WorkOs), SECRET);
        let headers: Headers = [(SIGNATURE.name, header)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, NOW)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, NOW * 1000 + 123, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "event_01HF0AZ4TQ7B1Z1K0QJ3V6G2XE");
        assert_eq!(event.event_type.as_deref(), Some("dsync.user.created"));
        assert_eq!(event.object_id.as_deref(), Some("directory_user_01E1X1"));
        assert_eq!(event.created_at, Some(NOW - 10));
    }

    #[test]
    fn window_both_directions_in_milliseconds() {
        test_support::assert_window(NOW, 180, |t| verify(&sign(SECRET, t * 1000, BODY), BODY));
        // The last millisecond of the 180th second past is still inside.
        assert!(verify(&sign(SECRET, (NOW + 180) * 1000 + 999, BODY), BODY).is_ok());
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, NOW * 1000, BODY);
        let mut tampered = BODY.to_vec();
        tampered[12] ^= 1;
        assert_eq!(verify(&good, &tampered).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(&sign("other", NOW * 1000, BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        // Seconds where WorkOS writes milliseconds: a timestamp 54 years old.
        assert_eq!(
            verify(&sign(SECRET, NOW, BODY), BODY).unwrap_err(),
            Reason::Timestamp
        );
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify("v1=00", BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_id = br#"{"event":"dsync.user.created","data":{}}"#;
        assert_eq!(
            verify(&sign(SECRET, NOW * 1000, no_id), no_id).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            name in any::<String>(),
            secret in "[A-Za-z0-9_]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "id": "event_1", "event": "user.created", "data": {"name": name}
            }))
            .unwrap();
            let value = sign(&secret, NOW * 1000, &body);
            const V1: SignatureHeader<'static> =
                SignatureHeader::hex("WorkOS-Signature", Algorithm::HmacSha256)
                    .with_prefix("t=1700000000000, v1=");
            let signed = Signed::in_header(Box::new(WorkOs), &secret, V1, &value, &[]);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
