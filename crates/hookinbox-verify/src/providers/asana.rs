//! `asana` — Asana webhooks (`X-Hook-Secret` handshake, `X-Hook-Signature`).
//!
//! Follows Asana's "Webhooks" guide and "Establish a webhook" reference
//! (developers.asana.com/docs/webhooks-guide, /reference/createwebhook).
//!
//! - Handover: while a `POST /webhooks` that creates a webhook is in flight,
//!   Asana POSTs to the target with an `X-Hook-Secret` header (and an empty
//!   body); the target must answer `200` or `204` echoing the same
//!   `X-Hook-Secret`, and keep it: it signs every later event. The operator
//!   never sees it. The adapter takes it only when the target URL carries
//!   the endpoint's `verify_token` as `?handshake=…` (see
//!   [`crate::handover`]; the webhook is created with that URL as its
//!   target), else `missing_signature`/`signature` (401) and nothing is kept.
//!   The service keeps it sealed, one per webhook (several webhooks may
//!   share one URL), and never logs it.
//! - Header of events: `X-Hook-Signature` = hex HMAC-SHA256 of the raw body,
//!   keyed with that secret as UTF-8 bytes.
//! - Tolerance: none. Asana signs no timestamp.
//! - Batches: one request's `events` holds every change since the last one
//!   (several, of several resources); the inbox stores the whole request as
//!   **one** event. A request with no events is Asana's heartbeat: answered
//!   `200`, not stored.
//! - Event id: **Asana sends none.** It is the natural key of the first event,
//!   from signed values a retry repeats unchanged:
//!   `"{created_at}:{resource.gid}:{action}"`, with `:{change.field}` when
//!   the change names one (two fields of one task changed in the same
//!   millisecond are two events). Not a hash. No first event with these is
//!   `missing_event_id`.
//! - Type: `{resource.resource_type}.{action}` (`task.changed`) when every
//!   event of the request has the same, else `events`. Object id: the first
//!   event's `resource.gid`. Created: its `created_at` (RFC 3339). No object
//!   version.
//! - Redelivery window: Asana retries an event that is not answered 2xx
//!   within 10 seconds for up to 24 hours. Two days are kept.

use crate::envelope::{self, Envelope};
use crate::handover::{Handover, HandshakeToken};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Reply, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, VectorSource,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Hook-Signature", Algorithm::HmacSha256).with_length(32);

/// The header of the handshake, and of its answer.
const SECRET_HEADER: &str = "X-Hook-Secret";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Asana",
    docs_url: "https://developers.asana.com/docs/webhooks-guide",
    scheme: "HMAC-SHA256 (the `X-Hook-Secret` of the handshake), hex, `X-Hook-Signature`",
    signed_parts: "raw body",
    id_source: "`{created_at}:{resource.gid}:{action}[:{field}]` of the first event (signed)",
    handshake: Some(
        "`X-Hook-Secret` POST to `?handshake=<verify_token>` echoed; the secret kept sealed, one per webhook",
    ),
    batch: Some("one request (`events`, several) stored as one event; no events: heartbeat, not stored"),
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/handshake_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug)]
pub struct Asana {
    /// The endpoint's `verify_token`, which a handover's URL carries.
    token: HandshakeToken,
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Asana {
        token: HandshakeToken::from_settings(settings, "asana")?,
    }))
}

impl Adapter for Asana {
    fn name(&self) -> &'static str {
        "asana"
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

    /// HMAC over the body, from whose first event the id and type are read.
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
        let events = body
            .get("events")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| Refusal::malformed_body("the body has no `events`"))?;
        let Some(first) = events.first() else {
            // The heartbeat: nothing happened.
            return Ok(Outcome::Handshake(Reply::text(Vec::new())));
        };
        let kinds: Vec<Option<String>> = events.iter().map(kind).collect();
        let event_type = match kinds.first() {
            Some(Some(kind)) if kinds.iter().all(|k| k.as_deref() == Some(kind)) => kind.clone(),
            _ => "events".to_owned(),
        };
        let resource = envelope::string_at(first, "/resource/gid");
        let (Some(created_at), Some(gid), Some(action)) = (
            envelope::string_at(first, "/created_at"),
            resource.as_ref(),
            envelope::string_at(first, "/action"),
        ) else {
            return Err(Refusal::missing_event_id(
                "the first event has no created_at, resource.gid or action",
            ));
        };
        let mut id = format!("{created_at}:{gid}:{action}");
        if let Some(field) = envelope::string_at(first, "/change/field") {
            id = format!("{id}:{field}");
        }
        let event = Envelope::with_id(id)?
            .event_type(Some(event_type))
            .object_id(resource)
            .created_at(envelope::rfc3339_seconds(&created_at));
        Ok(Outcome::Event(event))
    }

    fn handover(&self, request: &Request<'_>) -> Option<Result<Handover, Refusal>> {
        if request.headers.get(SIGNATURE.name).is_some() {
            return None;
        }
        let secret = request.headers.get(SECRET_HEADER)?;
        Some(self.token.hand_over(
            request.query,
            secret,
            Reply::text(Vec::new()),
            Some(SECRET_HEADER),
        ))
    }

    fn learns_secrets(&self) -> bool {
        true
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

/// `{resource_type}.{action}` of one event.
fn kind(event: &serde_json::Value) -> Option<String> {
    let resource_type = envelope::string_at(event, "/resource/resource_type")?;
    let action = envelope::string_at(event, "/action")?;
    Some(format!("{resource_type}.{action}"))
}

/// Signs a body the way Asana does, with the webhook's secret. Used by tests
/// and load generators.
pub fn sign(hook_secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(hook_secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{ExposeSecret, Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81";
    const BODY: &[u8] = br#"{"events":[{"user":{"gid":"1516","resource_type":"user"},"created_at":"2026-01-01T00:00:00.123Z","action":"changed","resource":{"gid":"1202","resource_type":"task","resource_subtype":"default_task"},"parent":null,"change":{"field":"completed","action":"changed"}},{"user":{"gid":"1516","resource_type":"user"},"created_at":"2026-01-01T00:00:00.456Z","action":"changed","resource":{"gid":"1203","resource_type":"task"},"parent":null}]}"#;

    const HANDSHAKE_TOKEN: &str = "asana-handshake-token";

    fn asana() -> Box<dyn Adapter> {
        build(&AdapterSettings {
            verify_token: Some(HANDSHAKE_TOKEN.into()),
            ..AdapterSettings::default()
        })
        .unwrap()
    }

    fn verify(header: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(asana(), SECRET);
        let headers: Headers = header
            .map(|value| ("X-Hook-Signature", value))
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn a_batch_reads_the_first_events_natural_key() {
        let verified = verify(Some(&sign(SECRET, BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "2026-01-01T00:00:00.123Z:1202:changed:completed"
        );
        assert_eq!(event.event_type.as_deref(), Some("task.changed"));
        assert_eq!(event.object_id.as_deref(), Some("1202"));
        assert_eq!(event.created_at, Some(1_767_225_600));
    }

    #[test]
    fn mixed_kinds_are_events_and_a_heartbeat_is_answered() {
        let body = br#"{"events":[{"created_at":"2026-01-01T00:00:00Z","action":"added","resource":{"gid":"1","resource_type":"story"}},{"created_at":"2026-01-01T00:00:00Z","action":"changed","resource":{"gid":"2","resource_type":"task"}}]}"#;
        let verified = verify(Some(&sign(SECRET, body)), body).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "2026-01-01T00:00:00Z:1:added");
        assert_eq!(event.event_type.as_deref(), Some("events"));
        let heartbeat = br#"{"events":[]}"#;
        let verified = verify(Some(&sign(SECRET, heartbeat)), heartbeat).unwrap();
        assert!(verified.event().is_none());
        assert!(
            matches!(verified.into_outcome(), Outcome::Handshake(reply) if reply.status == 200)
        );
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify(Some(&good), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(Some(&sign("another-webhook-secret", BODY)), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(Some("zz"), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_key = br#"{"events":[{"action":"changed"}]}"#;
        assert_eq!(
            verify(Some(&sign(SECRET, no_key)), no_key).unwrap_err(),
            Reason::MissingEventId
        );
        let no_events = br#"{"data":[]}"#;
        assert_eq!(
            verify(Some(&sign(SECRET, no_events)), no_events).unwrap_err(),
            Reason::MalformedBody
        );
    }

    #[test]
    fn the_hook_secret_post_is_a_handover_at_the_handshake_url() {
        let at = |query: Option<&str>, headers: &[(&str, &str)]| {
            let headers: Headers = headers.iter().copied().collect();
            asana().handover(&Request::new(&headers, b"").with_query(query))
        };
        let url = Some("handshake=asana-handshake-token");
        let handover = |headers: &[(&str, &str)]| at(url, headers);
        let taken = handover(&[("X-Hook-Secret", SECRET)]).unwrap().unwrap();
        assert_eq!(taken.secret.expose_secret(), SECRET);
        assert_eq!(taken.echo_header, Some("X-Hook-Secret"));
        assert_eq!(taken.reply.status, 200);
        assert!(handover(&[]).is_none());
        assert!(handover(&[("X-Hook-Secret", SECRET), ("X-Hook-Signature", "00")]).is_none());
        assert_eq!(
            handover(&[("X-Hook-Secret", "a\tb")])
                .unwrap()
                .unwrap_err()
                .reason,
            Reason::MalformedSignature
        );
        let refused = |query| {
            at(query, &[("X-Hook-Secret", SECRET)])
                .unwrap()
                .unwrap_err()
                .reason
        };
        assert_eq!(refused(None), Reason::MissingSignature);
        assert_eq!(refused(Some("handshake=guess")), Reason::Signature);
    }

    #[test]
    fn the_handshake_token_is_required() {
        assert_eq!(
            build(&AdapterSettings::default()).unwrap_err(),
            SettingsError::Missing {
                provider: "asana",
                field: "verify_token"
            }
        );
        assert!(!format!("{:?}", asana()).contains(HANDSHAKE_TOKEN));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in prop::collection::vec(any::<u8>(), 1..256),
            secret in "[a-f0-9]{1,64}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = Signed::in_header(asana(), &secret, SIGNATURE, &sign(&secret, &body), &[]);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
