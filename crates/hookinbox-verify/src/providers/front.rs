//! `front` — Front application webhooks (`X-Front-Signature`), with the
//! `X-Front-Challenge` check Front sends when the webhook is saved.
//!
//! Follows Front's "Application webhooks" page
//! (dev.frontapp.com/docs/application-webhooks, "Application webhook
//! validation" and "Verifying integrity").
//!
//! - Headers: `X-Front-Signature`, the standard base64 of the HMAC-SHA256 of
//!   `"{X-Front-Request-Timestamp}:{raw body}"` keyed with the app's signing
//!   key (Front's developer settings) as UTF-8 bytes; `X-Front-Request-Timestamp`,
//!   unix **milliseconds**, signed as sent.
//! - Tolerance: 300 s in both directions (Front: reject requests older than
//!   five minutes); milliseconds floored to seconds.
//! - Handshake: when the webhook is saved Front POSTs a signed
//!   `{"type":"sync",…}` with an `X-Front-Challenge` header; once verified,
//!   the challenge is answered as the body (`text/plain`) and nothing is
//!   stored. The challenge header is not signed; echoing it reveals nothing.
//! - Event id: body `payload.id` (`evt_…`), the event's id, the same on
//!   every retry. Signed. Type: `type` (`inbound_received`,
//!   `assignee_changed`). Object id: `payload.conversation.id`. Created:
//!   `payload.emitted_at` (unix seconds with a fraction). No object version.
//! - Rule webhooks (HMAC-SHA1 of the body under the API secret, no
//!   timestamp) are another scheme and are not this provider; they fit
//!   `generic_hmac`.
//! - Redelivery window: Front retries a failed delivery with backoff and
//!   publishes no total span; one day is kept, an assumption.

use crate::encoding;
use crate::envelope::{JsonFields, Reply};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, SignedMessage, VectorSource,
};

/// Standard base64 of the HMAC-SHA256 of `"{timestamp}:{body}"`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("X-Front-Signature", Algorithm::HmacSha256).with_length(32);

/// Unix milliseconds, signed as sent.
const TIMESTAMP: &str = "X-Front-Request-Timestamp";

/// Present only on the check Front sends when the webhook is saved.
const CHALLENGE: &str = "X-Front-Challenge";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Front",
    docs_url: "https://dev.frontapp.com/docs/application-webhooks",
    scheme: "HMAC-SHA256, base64, `X-Front-Signature` (application webhooks)",
    signed_parts: "`{X-Front-Request-Timestamp}:{body}` (milliseconds)",
    id_source: "body `payload.id`",
    handshake: Some("`X-Front-Challenge` on a signed POST, echoed as the body"),
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/ops_commerce_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

const ID: &str = "/payload/id";
const TYPE: &str = "/type";
const CONVERSATION: &str = "/payload/conversation/id";
const EMITTED: &str = "/payload/emitted_at";

#[derive(Debug, Default)]
pub struct Front;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Front))
}

impl Adapter for Front {
    fn name(&self) -> &'static str {
        "front"
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

    /// HMAC over the timestamp and the body, which holds the id and the type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
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
                .owned(format!("{timestamp}:"))
                .borrowed(request.body),
            candidates: vec![SIGNATURE.decode(value)?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let fields = JsonFields::read(request.body, &[ID, TYPE, CONVERSATION, EMITTED])?;
        if let Some(challenge) = request.headers.get_nonempty(CHALLENGE) {
            return Ok(Outcome::Handshake(Reply::text(
                challenge.as_bytes().to_vec(),
            )));
        }
        let emitted = fields
            .string_at(EMITTED)
            .and_then(|text| text.parse::<f64>().ok())
            .filter(|seconds| seconds.is_finite())
            // Whole seconds of a unix time: far inside i64.
            .map(|seconds| seconds.floor() as i64);
        let event = fields
            .required_id_at(ID)?
            .event_type(fields.string_at(TYPE))
            .object_id(fields.string_at(CONVERSATION))
            .created_at(emitted);
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let millis = outgoing.now.saturating_mul(1000);
        let signature = SIGNATURE.sign_hmac(
            crate::signer::shared_secret(&key)?,
            &[format!("{millis}:").as_bytes(), outgoing.body],
        );
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(SIGNATURE.name, signature)
            .header(TIMESTAMP, millis.to_string()))
    }
}

/// The `X-Front-Signature` value Front sends for `body` at `millis`. For
/// tests and examples.
pub fn sign(signing_key: &str, millis: i64, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(
        signing_key.as_bytes(),
        &[format!("{millis}:").as_bytes(), body],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const KEY: &str = "front-app-signing-key-0123456789";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"type":"inbound_received","authorization":{"id":"cmp_1a2b"},"payload":{"_links":{"self":"https://api2.frontapp.com/events/evt_55c8c149"},"id":"evt_55c8c149","type":"inbound","emitted_at":1699999999.123,"conversation":{"id":"cnv_55c8c149","subject":"Order status"},"source":{"_meta":{"type":"inboxes"}}}}"#;

    fn verify_with(
        signature: &str,
        millis: &str,
        challenge: Option<&str>,
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let mut headers: Headers = [("X-Front-Signature", signature), (TIMESTAMP, millis)]
            .into_iter()
            .collect();
        if let Some(challenge) = challenge {
            headers.append(CHALLENGE, challenge);
        }
        let verifier = test_support::verifier(Box::new(Front), KEY);
        test_support::verify(&verifier, &headers, body, NOW)
    }

    fn verify_at(seconds: i64, body: &[u8]) -> Result<Verified, Reason> {
        let millis = seconds * 1000 + 250;
        verify_with(&sign(KEY, millis, body), &millis.to_string(), None, body)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify_at(NOW, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "evt_55c8c149");
        assert_eq!(event.event_type.as_deref(), Some("inbound_received"));
        assert_eq!(event.object_id.as_deref(), Some("cnv_55c8c149"));
        assert_eq!(event.created_at, Some(1_699_999_999));
    }

    #[test]
    fn timestamp_window_edges_both_ways() {
        test_support::assert_window(NOW, 300, |at| verify_at(at, BODY));
    }

    #[test]
    fn the_challenge_of_a_signed_sync_is_echoed() {
        let sync = br#"{"type":"sync","authorization":{"id":"cmp_abc"}}"#;
        let millis = (NOW * 1000).to_string();
        let signature = sign(KEY, NOW * 1000, sync);
        let verified = verify_with(&signature, &millis, Some("c-8f2e"), sync).unwrap();
        let Outcome::Handshake(reply) = verified.outcome() else {
            panic!("a handshake, not {:?}", verified.outcome());
        };
        assert_eq!(reply.body, b"c-8f2e");
        assert_eq!(reply.status, 200);
        // Unsigned, it is refused like any request.
        let other = sign("other", NOW * 1000, sync);
        assert_eq!(
            verify_with(&other, &millis, Some("c-8f2e"), sync).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn refusals() {
        let millis = NOW * 1000;
        let good = sign(KEY, millis, BODY);
        let mut tampered = BODY.to_vec();
        tampered[12] ^= 1;
        assert_eq!(
            verify_with(&good, &millis.to_string(), None, &tampered).unwrap_err(),
            Reason::Signature
        );
        // The timestamp is signed as sent.
        assert_eq!(
            verify_with(&good, &(millis + 1).to_string(), None, BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_with("", &millis.to_string(), None, BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify_with(&good, "", None, BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify_with(&good, "soon", None, BODY).unwrap_err(),
            Reason::Timestamp
        );
        assert_eq!(
            verify_with("%%%", &millis.to_string(), None, BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_id = br#"{"type":"inbound_received","payload":{"type":"inbound"}}"#;
        assert_eq!(
            verify_with(&sign(KEY, millis, no_id), &millis.to_string(), None, no_id).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            subject in any::<String>(),
            secret in "[A-Za-z0-9_]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "type": "inbound_received", "payload": {"id": "evt_1", "conversation": {"subject": subject}}
            }))
            .unwrap();
            let millis = "1700000000000";
            let signed = Signed::in_header(
                Box::new(Front), &secret, SIGNATURE, &sign(&secret, 1_700_000_000_000, &body), &[(TIMESTAMP, millis)],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
