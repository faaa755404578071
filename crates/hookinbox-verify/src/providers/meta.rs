//! `meta` — Meta (Facebook) Graph API webhooks: WhatsApp Business,
//! Messenger, Instagram and every other Graph API object.
//!
//! Follows Meta's "Getting Started" guide for Webhooks
//! (developers.facebook.com/docs/graph-api/webhooks/getting-started):
//! "Verification Requests" and "Event Notifications" → "Validating
//! Payloads".
//!
//! - Verification request: when an app subscribes the URL, Meta sends a
//!   `GET` with `hub.mode=subscribe`, `hub.challenge` and `hub.verify_token`
//!   in the query. The token is the string entered in the app dashboard
//!   ("Verify Token"), configured as the endpoint's `verify_token`. When it
//!   matches (compared in constant time) and the mode is `subscribe`, the
//!   answer is `200` with the challenge as the body, nothing stored; a wrong
//!   token is `signature` (401), a query without the three fields
//!   `missing_signature`. The challenge is echoed only when it is short,
//!   printable ASCII (Meta sends an integer).
//! - Header of events: `X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256
//!   of the raw body keyed with the **App Secret** (as UTF-8 bytes; not the
//!   verify token). The legacy SHA-1 `X-Hub-Signature` is not accepted.
//! - Signed bytes: the raw body only. Tolerance: none (no timestamp).
//! - Batches: one notification `{"object", "entry": [...]}` may carry many
//!   entries, each with several `changes` (or `messaging` items): Meta
//!   batches up to 1000 updates. The inbox stores the whole request as
//!   **one** event; splitting it is the consumer's.
//! - Event id: **Meta sends none** (entries carry the object's id and a
//!   time, not an id of the notification). A retry resends the same payload,
//!   so the id is the body's fingerprint: `sha256:` and the hex SHA-256 of
//!   the signed raw body.
//! - Type: `object` (`whatsapp_business_account`, `page`, `instagram`), with
//!   `.{field}` when every change of the notification names the same field
//!   (`whatsapp_business_account.messages`). Object id: the first entry's
//!   `id`. Created: the first entry's `time` (seconds; Messenger's
//!   milliseconds are not read). No object version.
//! - Redelivery window: Meta retries a failed notification immediately,
//!   then less often, for up to 36 hours. Two days are kept.

use sha2::Digest;
use subtle::ConstantTimeEq;

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Reply, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};

/// `sha256=` and the hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Hub-Signature-256", Algorithm::HmacSha256).with_prefix("sha256=");

/// The longest `hub.challenge` echoed back.
const MAX_CHALLENGE_LEN: usize = 256;

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Meta (WhatsApp, Messenger, Instagram)",
    docs_url: "https://developers.facebook.com/docs/graph-api/webhooks/getting-started",
    scheme: "HMAC-SHA256 (App Secret), hex, `X-Hub-Signature-256: sha256=`",
    signed_parts: "raw body",
    id_source: "body fingerprint (SHA-256 of the signed body)",
    handshake: Some("`hub.challenge` GET, `hub.verify_token` = the endpoint's `verify_token`"),
    batch: Some("one notification (many entries and changes) stored as one event"),
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

pub struct Meta {
    /// SHA-256 of the configured verify token, compared in constant time.
    verify_token_digest: [u8; 32],
}

impl std::fmt::Debug for Meta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Meta { verify_token: [redacted] }")
    }
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    let token = settings
        .verify_token
        .as_deref()
        .filter(|token| !token.is_empty())
        .ok_or(SettingsError::Missing {
            provider: "meta",
            field: "verify_token",
        })?;
    Ok(Box::new(Meta {
        verify_token_digest: sha2::Sha256::digest(token.as_bytes()).into(),
    }))
}

impl Adapter for Meta {
    fn name(&self) -> &'static str {
        "meta"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        2 * 24 * 3600
    }

    /// HMAC over the body, whose fingerprint is the id and which holds the type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let object = envelope::string_at(&body, "/object")
            .ok_or_else(|| Refusal::malformed_body("the notification has no `object`"))?;
        let entries = body
            .get("entry")
            .and_then(serde_json::Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let fields: Vec<Option<String>> = entries
            .iter()
            .flat_map(|entry| {
                entry
                    .get("changes")
                    .and_then(serde_json::Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default()
            })
            .map(|change| envelope::string_at(change, "/field"))
            .collect();
        let event_type = match fields.first() {
            Some(Some(field)) if fields.iter().all(|f| f.as_deref() == Some(field)) => {
                format!("{object}.{field}")
            }
            _ => object,
        };
        let first = entries.first();
        let event = Envelope::with_id(body_fingerprint(request.body))?
            .event_type(Some(event_type))
            .object_id(first.and_then(|e| envelope::string_at(e, "/id")))
            .created_at(
                first
                    .and_then(|e| envelope::integer_at(e, "/time"))
                    .filter(|time| *time < 100_000_000_000),
            );
        Ok(Outcome::Event(event))
    }

    fn verification_request(&self, query: Option<&str>) -> Option<Result<Reply, Refusal>> {
        Some(self.answer_verification(query.unwrap_or_default()))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        crate::signer::body_hmac(&SIGNATURE, &key, outgoing)
    }
}

impl Meta {
    fn answer_verification(&self, query: &str) -> Result<Reply, Refusal> {
        let mut mode = None;
        let mut token = None;
        let mut challenge = None;
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            match name.as_ref() {
                "hub.mode" => mode = Some(value),
                "hub.verify_token" => token = Some(value),
                "hub.challenge" => challenge = Some(value),
                _ => {}
            }
        }
        let (Some(mode), Some(token), Some(challenge)) = (mode, token, challenge) else {
            return Err(Refusal::missing_signature(
                "a verification request needs hub.mode, hub.verify_token and hub.challenge",
            ));
        };
        let presented: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        if !bool::from(presented.ct_eq(&self.verify_token_digest)) {
            return Err(Refusal::signature("hub.verify_token is not the endpoint's"));
        }
        if mode != "subscribe" {
            return Err(Refusal::malformed_signature("hub.mode is not `subscribe`"));
        }
        if challenge.is_empty()
            || challenge.len() > MAX_CHALLENGE_LEN
            || !challenge.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(Refusal::malformed_signature(
                "hub.challenge is not short printable ASCII",
            ));
        }
        Ok(Reply::text(challenge.into_owned()))
    }
}

/// The id of a notification Meta gives no id: `sha256:` and the hex SHA-256
/// of the signed body.
fn body_fingerprint(body: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(body)))
}

/// Signs a body the way Meta does, with the App Secret. Used by tests and
/// load generators.
pub fn sign(app_secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(app_secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const APP_SECRET: &str = "meta-app-secret";
    const VERIFY_TOKEN: &str = "meatyhamhock";
    const BODY: &[u8] = br#"{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","time":1700000000,"changes":[{"value":{"messaging_product":"whatsapp","messages":[{"id":"wamid.1","text":{"body":"hi"}}]},"field":"messages"}]}]}"#;

    fn meta() -> Box<dyn Adapter> {
        build(&AdapterSettings {
            verify_token: Some(VERIFY_TOKEN.into()),
            ..AdapterSettings::default()
        })
        .unwrap()
    }

    fn verify(signature: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(meta(), APP_SECRET);
        let headers: Headers = signature
            .map(|s| ("X-Hub-Signature-256", s))
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    fn get(query: &str) -> Result<Reply, Reason> {
        meta()
            .verification_request(Some(query))
            .expect("meta answers GETs")
            .map_err(|refusal| refusal.reason)
    }

    #[test]
    fn the_verify_token_is_required() {
        assert_eq!(
            build(&AdapterSettings::default()).unwrap_err(),
            SettingsError::Missing {
                provider: "meta",
                field: "verify_token"
            }
        );
        assert!(!format!("{:?}", meta()).contains(VERIFY_TOKEN));
    }

    #[test]
    fn verification_request_echoes_the_challenge() {
        let reply =
            get("hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock")
                .unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, b"1158201444");
        assert!(reply.content_type.starts_with("text/plain"));
    }

    #[test]
    fn verification_request_refusals() {
        assert_eq!(
            get("hub.mode=subscribe&hub.challenge=1&hub.verify_token=wrong").unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            get("hub.mode=subscribe&hub.challenge=1").unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            get("hub.mode=unsubscribe&hub.challenge=1&hub.verify_token=meatyhamhock").unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            get("hub.mode=subscribe&hub.challenge=%3Cscript%3E%20x&hub.verify_token=meatyhamhock")
                .unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            meta()
                .verification_request(None)
                .unwrap()
                .unwrap_err()
                .reason,
            Reason::MissingSignature
        );
    }

    #[test]
    fn valid_notification_reads_the_envelope() {
        let verified = verify(Some(&sign(APP_SECRET, BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, body_fingerprint(BODY));
        assert_eq!(
            event.event_type.as_deref(),
            Some("whatsapp_business_account.messages")
        );
        assert_eq!(event.object_id.as_deref(), Some("102290129340398"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let good = sign(APP_SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[20] ^= 1;
        assert_eq!(
            verify(Some(&good), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(Some(&sign(VERIFY_TOKEN, BODY)), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(Some(&good.replace("sha256=", "sha1=")), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_object = br#"{"entry":[]}"#;
        assert_eq!(
            verify(Some(&sign(APP_SECRET, no_object)), no_object).unwrap_err(),
            Reason::MalformedBody
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in prop::collection::vec(any::<u8>(), 1..256),
            secret in "[A-Za-z0-9]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = Signed::in_header(meta(), &secret, SIGNATURE, &sign(&secret, &body), &[]);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }

        #[test]
        fn any_query_is_answered_without_panicking(query in ".{0,200}") {
            let _ = get(&query);
        }
    }
}
