//! `elevenlabs` — ElevenLabs webhooks (`ElevenLabs-Signature`).
//!
//! Follows ElevenLabs' "Webhooks" page (elevenlabs.io/docs/eleven-api/
//! resources/webhooks, "HMAC webhook configuration") and the verifier of its
//! official SDK (PyPI `elevenlabs`, `webhooks.construct_event`, and the same
//! code in npm `@elevenlabs/elevenlabs-js`).
//!
//! - Header: `ElevenLabs-Signature: t=<unix seconds>,v0=<hex>`; `v0` is the
//!   only version. Signed bytes: `"{t}.{raw body}"`, HMAC-SHA256 keyed with
//!   the webhook's signing secret exactly as the settings page shows it
//!   (`wsec_…`), as UTF-8 bytes.
//! - Tolerance: 1800 s. The SDK refuses a `t` more than 30 minutes old and
//!   checks no future bound; hookinbox applies the same 30 minutes in both
//!   directions, so a clock-skewed or forged future `t` cannot extend a
//!   capture's replay life.
//! - Event id: ElevenLabs sends none. Every event carries its `type` and,
//!   in `data`, the object it reports; the id is `"{type}:{data.conversation_id}"`
//!   for the agent-platform events (`post_call_transcription`,
//!   `post_call_audio`, `call_initiation_failure`), `"{type}:{data.voice_id}"`
//!   for the voice-library notices, else `"{type}@{event_timestamp}"`. All
//!   are signed body fields a retry repeats. No `type` (or none of the
//!   three keys) is `missing_event_id`.
//! - Type: `type`. Object id: `data.conversation_id` or `data.voice_id`.
//!   Created: `event_timestamp` (unix seconds). No object version.
//! - Redelivery window: retries are opt-in per webhook and the page states
//!   no span; 24 hours are kept, an assumption to revisit when ElevenLabs
//!   documents one.

use crate::dotted_timestamp::TimestampUnit;
use crate::envelope::{Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureList, VectorSource,
};

/// `t=<seconds>,v0=<hex>`.
const SIGNATURE: SignatureList<'static> = SignatureList {
    name: "ElevenLabs-Signature",
    separator: ',',
    timestamp_key: "t",
    signature_key: "v0",
    algorithm: Algorithm::HmacSha256,
};

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "ElevenLabs",
    docs_url: "https://elevenlabs.io/docs/eleven-api/resources/webhooks",
    scheme: "HMAC-SHA256, hex, `ElevenLabs-Signature: t=…,v0=…`",
    signed_parts: "`{t}.{body}`",
    id_source:
        "`{type}:{data.conversation_id}` (or `data.voice_id`, else `{type}@{event_timestamp}`)",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("elevenlabs (PyPI) verifies; Python hmac signs as it reads"),
    signing: crate::Signing::Symmetric,
};

const POINTERS: [&str; 4] = [
    "/type",
    "/event_timestamp",
    "/data/conversation_id",
    "/data/voice_id",
];

#[derive(Debug, Default)]
pub struct Elevenlabs;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Elevenlabs))
}

impl Adapter for Elevenlabs {
    fn name(&self) -> &'static str {
        "elevenlabs"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(30 * 60)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// HMAC over the timestamp and the body; the id and type are read from it.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.dotted_timestamp_claim(request, TimestampUnit::Seconds)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let fields = JsonFields::read(request.body, &POINTERS)?;
        let kind = fields
            .string_at("/type")
            .filter(|kind| !kind.trim().is_empty())
            .ok_or_else(|| Refusal::missing_event_id("the body has no `type`"))?;
        let created = fields.integer_at("/event_timestamp");
        let object = fields
            .string_at("/data/conversation_id")
            .or_else(|| fields.string_at("/data/voice_id"))
            .filter(|object| !object.trim().is_empty());
        let id = match (&object, created) {
            (Some(object), _) => format!("{kind}:{object}"),
            (None, Some(at)) => format!("{kind}@{at}"),
            (None, None) => {
                return Err(Refusal::missing_event_id(
                    "the body needs `data.conversation_id`, `data.voice_id` or `event_timestamp` to name the event",
                ))
            }
        };
        let event = Envelope::with_id(id)?
            .event_type(Some(kind))
            .object_id(object)
            .created_at(created);
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        Ok(crate::signer::SignedRequest::json(outgoing.body).header(
            SIGNATURE.name,
            SIGNATURE.dotted_timestamp_header(secret, outgoing.now, outgoing.body, ","),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "wsec_0123456789abcdef0123456789abcdef";
    const NOW: i64 = 1_739_537_297;
    const BODY: &[u8] = br#"{"type":"post_call_transcription","event_timestamp":1739537297,"data":{"agent_id":"xyz","conversation_id":"conv_01jkq2","status":"done","transcript":[{"role":"agent","message":"Hello"}]}}"#;

    fn header(secret: &str, at: i64, body: &[u8]) -> String {
        SIGNATURE.dotted_timestamp_header(secret.as_bytes(), at, body, ",")
    }

    fn verify(value: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Elevenlabs), SECRET);
        let headers: Headers = value
            .map(|v| ("ElevenLabs-Signature", v))
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, NOW)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(&header(SECRET, NOW - 5, BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "post_call_transcription:conv_01jkq2");
        assert_eq!(event.event_type.as_deref(), Some("post_call_transcription"));
        assert_eq!(event.object_id.as_deref(), Some("conv_01jkq2"));
        assert_eq!(event.created_at, Some(1_739_537_297));
    }

    #[test]
    fn voice_notices_and_bare_events_have_ids() {
        let voice = br#"{"type":"voice_removal_notice","event_timestamp":1739537000,"data":{"voice_id":"v_42","voice_name":"Ada"}}"#;
        let event = verify(Some(&header(SECRET, NOW, voice)), voice)
            .unwrap()
            .event()
            .unwrap()
            .clone();
        assert_eq!(event.event_id, "voice_removal_notice:v_42");
        let bare = br#"{"type":"voice_removed","event_timestamp":1739537000,"data":{}}"#;
        let event = verify(Some(&header(SECRET, NOW, bare)), bare)
            .unwrap()
            .event()
            .unwrap()
            .clone();
        assert_eq!(event.event_id, "voice_removed@1739537000");
        for unnamed in [
            &br#"{"event_timestamp":1,"data":{"conversation_id":"c"}}"#[..],
            br#"{"type":"post_call_audio","data":{}}"#,
        ] {
            assert_eq!(
                verify(Some(&header(SECRET, NOW, unnamed)), unnamed).unwrap_err(),
                Reason::MissingEventId
            );
        }
    }

    #[test]
    fn tolerance_window_both_directions() {
        test_support::assert_window(NOW, 1800, |at| {
            verify(Some(&header(SECRET, at, BODY)), BODY)
        });
    }

    #[test]
    fn refusals() {
        let good = header(SECRET, NOW, BODY);
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify(Some(&good), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(Some(&header("wsec_other", NOW, BODY)), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        let v1 = good.replace("v0=", "v1=");
        for malformed in ["t=1739537297", "v0=00", "t=1,t=2,v0=00", &v1] {
            assert_eq!(
                verify(Some(malformed), BODY).unwrap_err(),
                Reason::MalformedSignature,
                "{malformed}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn single_byte_changes_of_body_or_signature_are_refused(
            body in prop::collection::vec(any::<u8>(), 1..256),
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = header(SECRET, NOW, &body);
            prop_assert!(verify(Some(&signed), &body).map(|_| ()) != Err(Reason::Signature));
            let mut changed = body.clone();
            changed[at.index(body.len())] ^= flip;
            prop_assert!(verify(Some(&signed), &changed).is_err());
            let (timestamp, signature) = signed.split_once(",v0=").unwrap();
            let mut bytes = hex::decode(signature).unwrap();
            let i = at.index(bytes.len());
            bytes[i] ^= flip;
            let changed_header = format!("{timestamp},v0={}", hex::encode(bytes));
            prop_assert_eq!(verify(Some(&changed_header), &body).unwrap_err(), Reason::Signature);
        }
    }
}
