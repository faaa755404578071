//! `frame_io` — Frame.io webhooks (`X-Frameio-Signature`).
//!
//! Follows Frame.io's webhook guides (developer.frame.io, "Webhooks",
//! "Security and verification" for the V4 API; the legacy V2 "Webhooks
//! Overview" signs alike); Frame.io publishes no SDK that verifies.
//!
//! - Headers: `X-Frameio-Request-Timestamp` (integer unix seconds) and
//!   `X-Frameio-Signature: v0=<hex>`. Signed bytes:
//!   `"v0:{timestamp}:{raw body}"`, the timestamp as sent, HMAC-SHA256
//!   keyed with the webhook's signing secret exactly as Frame.io returns it
//!   when the webhook is created, as UTF-8 bytes.
//! - Tolerance: 300 s in both directions; Frame.io asks receivers to refuse
//!   requests whose timestamp is more than 5 minutes from their clock.
//! - Event id: Frame.io sends none. A payload names the event `type`
//!   (`file.ready`), the `resource` it is about (`{type, id}`) and the
//!   account, workspace, project and user, but no time or sequence, so two
//!   `file.updated` of one file are byte-identical. The id is composed of
//!   the signed `type`, `resource.id` and the signed request timestamp:
//!   `"{type}:{resource.id}:{timestamp}"`. A natural key, not a hash. A
//!   retry is signed again at its own time, so it gets a new id and is
//!   delivered again (at least once); an id without the timestamp would
//!   instead merge distinct events of one resource into one (lost).
//!   Without `type` or `resource.id`: `missing_event_id`.
//! - Type: `type`. Object id: `resource.id`. No created time, no object
//!   version.
//! - Redelivery window: the pages followed here state no retry span; 24
//!   hours are kept, an assumption to revisit when Frame.io documents one.

use crate::envelope::{Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::unix_timestamp;
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, VectorSource,
};

/// `v0=` then the hex HMAC-SHA256 of `"v0:{timestamp}:{body}"`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Frameio-Signature", Algorithm::HmacSha256)
        .with_prefix("v0=")
        .with_length(32);
const TIMESTAMP: &str = "X-Frameio-Request-Timestamp";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Frame.io",
    docs_url: "https://developer.frame.io/platform/v4/docs/guides/webhooks",
    scheme: "HMAC-SHA256, hex, `X-Frameio-Signature: v0=…` + `X-Frameio-Request-Timestamp`",
    signed_parts: "`v0:{timestamp}:{body}`",
    id_source: "`{type}:{resource.id}:{timestamp}` (signed; a retry is a new id)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/provb_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct FrameIo;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(FrameIo))
}

impl Adapter for FrameIo {
    fn name(&self) -> &'static str {
        "frame_io"
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

    /// HMAC over the timestamp and the body; the id is composed of both.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.timestamped_claim(request, TIMESTAMP, |t| format!("v0:{}:", t.text))
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(request.body, &["/type", "/resource/id"])?;
        let (Some(kind), Some(resource)) =
            (body.string_at("/type"), body.string_at("/resource/id"))
        else {
            return Err(Refusal::missing_event_id(
                "no `type` and `resource.id` to name the event",
            ));
        };
        // Verified already, so the timestamp header is there and an integer.
        let timestamp = unix_timestamp(request.headers, TIMESTAMP)?;
        let event = Envelope::with_id(format!("{kind}:{resource}:{}", timestamp.text))?
            .event_type(Some(kind))
            .object_id(Some(resource));
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
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(TIMESTAMP, timestamp.as_str())
            .header(
                SIGNATURE.name,
                SIGNATURE.sign_hmac(
                    secret,
                    &[format!("v0:{timestamp}:").as_bytes(), outgoing.body],
                ),
            ))
    }
}

/// The `X-Frameio-Signature` value for `body` sent at `timestamp`. Used by
/// tests.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(
        secret.as_bytes(),
        &[format!("v0:{timestamp}:").as_bytes(), body],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "fixtureFrameIoSigningSecret000000000001";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"account":{"id":"6f70f1bd-7e89-4a7e-b4d3-7e576585a181"},"project":{"id":"7e46a1b1-5c8b-4c2f-9f3c-2d1d4a0e9a10"},"resource":{"id":"d3075547-4e64-45f0-ad12-d075660eddd2","type":"file"},"type":"file.ready","user":{"id":"56556a3f-859f-4b38-b6c6-e8625b5da8a5"},"workspace":{"id":"2a2a4d8e-3b7b-4c55-8d3a-0a6c0c7d1e22"}}"#;

    fn verify(timestamp: i64, signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(FrameIo), SECRET);
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
            format!("file.ready:d3075547-4e64-45f0-ad12-d075660eddd2:{NOW}")
        );
        assert_eq!(event.event_type.as_deref(), Some("file.ready"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("d3075547-4e64-45f0-ad12-d075660eddd2")
        );
    }

    #[test]
    fn window_both_directions() {
        test_support::assert_window(NOW, 300, |t| verify(t, &sign(SECRET, t, BODY), BODY));
    }

    #[test]
    fn refusals() {
        let mut tampered = BODY.to_vec();
        tampered[20] ^= 1;
        assert_eq!(
            verify(NOW, &sign(SECRET, NOW, BODY), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(NOW, &sign("other", NOW, BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        // The timestamp is signed.
        assert_eq!(
            verify(NOW + 1, &sign(SECRET, NOW, BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(NOW, "", BODY).unwrap_err(), Reason::MissingSignature);
        let unprefixed = sign(SECRET, NOW, BODY).replacen("v0=", "", 1);
        assert_eq!(
            verify(NOW, &unprefixed, BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_resource = br#"{"type":"project.created"}"#;
        assert_eq!(
            verify(NOW, &sign(SECRET, NOW, no_resource), no_resource).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            name in any::<String>(),
            secret in "[A-Za-z0-9]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "type": "file.created", "resource": {"id": "r1", "type": "file", "name": name}
            }))
            .unwrap();
            let signed = Signed::in_header(
                Box::new(FrameIo), &secret, SIGNATURE, &sign(&secret, NOW, &body),
                &[(TIMESTAMP, "1700000000")],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
