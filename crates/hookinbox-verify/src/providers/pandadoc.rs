//! `pandadoc` — PandaDoc webhooks (the `signature` query parameter).
//!
//! Follows PandaDoc's "How to Verify Webhook Authenticity" guide
//! (developers.pandadoc.com/docs/webhook-verification) and its webhook
//! overview (deduplication, batches); PandaDoc publishes no SDK that
//! verifies.
//!
//! - Signature: not a header. PandaDoc appends `?signature=<hex>` to the
//!   subscription's URL on every delivery; the value is the hex HMAC-SHA256
//!   of the raw body, keyed with the subscription's shared key exactly as
//!   the Developer Dashboard shows it, as UTF-8 bytes. No other part of the
//!   request is signed. A query with no `signature` is `missing_signature`;
//!   two of them, or a value that is not 32 bytes of hex,
//!   `malformed_signature`.
//! - Tolerance: none. PandaDoc signs no timestamp, so a captured request
//!   verifies for as long as the key is unchanged; dedup is what stops its
//!   replay inside the redelivery window.
//! - Body: a JSON *array* of notifications (`event`, `data`); PandaDoc may
//!   put several into one request, and one request is the unit hookinbox
//!   stores.
//! - Event id: the `X-PandaDoc-Webhook-Event-Id` header, PandaDoc's stable
//!   id of one delivery, kept across automatic and manual retries. It is
//!   **not signed**; where it is absent (deliveries before July 2026) the id
//!   is the fingerprint of the signed body (`sha256:` and its hex SHA-256),
//!   which a retry repeats. Either way the id is declared unsigned, so the
//!   body fingerprint also deduplicates.
//! - Type: the notifications' common `event` (`document_state_changed`),
//!   `batch` when they differ. Object id: `data.id` (the document or
//!   template) when every notification shares it. Created: the first
//!   notification's `data.date_modified` (RFC 3339). No object version.
//! - Redelivery window: the pages followed here state no retry span; 24
//!   hours are kept, an assumption to revisit when PandaDoc documents one.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, ProviderFacts, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, SignedMessage, VectorSource,
};

/// The hex HMAC-SHA256 of the body, read from the query rather than a
/// header; `name` is what refusal details call it.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("the `signature` query parameter", Algorithm::HmacSha256).with_length(32);

/// The query parameter PandaDoc appends.
const PARAMETER: &str = "signature";

/// PandaDoc's delivery id, stable across retries, unsigned.
const EVENT_ID: &str = "X-PandaDoc-Webhook-Event-Id";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "PandaDoc",
    docs_url: "https://developers.pandadoc.com/docs/webhook-verification",
    scheme: "HMAC-SHA256, hex, query parameter `signature`",
    signed_parts: "raw body",
    id_source: "header `X-PandaDoc-Webhook-Event-Id`, else body fingerprint",
    handshake: None,
    batch: Some("a JSON array of notifications; the request is stored as one event"),
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/pandadoc_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Pandadoc;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Pandadoc))
}

impl Adapter for Pandadoc {
    fn name(&self) -> &'static str {
        "pandadoc"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// HMAC over the body, from which the type comes; the id is the unsigned
    /// `X-PandaDoc-Webhook-Event-Id` header when PandaDoc sends it.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: false,
            event_type: true,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let value = signature_parameter(request.query)?;
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new().borrowed(request.body),
            candidates: vec![SIGNATURE.decode(value.trim())?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let notifications = body.as_array().ok_or_else(|| {
            Refusal::malformed_body("the body is not a JSON array of notifications")
        })?;
        if notifications.iter().any(|n| !n.is_object()) {
            return Err(Refusal::malformed_body(
                "an element of the batch is not an object",
            ));
        }
        let Some(first) = notifications.first() else {
            return Err(Refusal::malformed_body("the batch has no notifications"));
        };
        let id = match request.headers.get_nonempty(EVENT_ID) {
            Some(delivery) => delivery.to_owned(),
            None => envelope::body_fingerprint(request.body),
        };
        let event = Envelope::with_id(id)?
            .event_type(
                super::sendgrid::common(notifications, "/event").or_else(|| Some("batch".into())),
            )
            .object_id(super::sendgrid::common(notifications, "/data/id"))
            .created_at(envelope::rfc3339_at(first, "/data/date_modified"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(EVENT_ID, outgoing.event_id)
            .query(signed_query(secret, outgoing.body)))
    }
}

/// The one `signature` parameter of the query, decoded from its URL form.
fn signature_parameter(query: Option<&str>) -> Result<String, Refusal> {
    let mut values = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(name, _)| name == PARAMETER)
        .map(|(_, value)| value.into_owned());
    let value = values
        .next()
        .filter(|value| !value.trim().is_empty())
        .ok_or_else(|| Refusal::missing_signature("no `signature` query parameter"))?;
    if values.next().is_some() {
        return Err(Refusal::malformed_signature(
            "more than one `signature` query parameter",
        ));
    }
    Ok(value)
}

/// The query string PandaDoc appends for `body`: `signature=<hex>`. Used by
/// the signer, tests and load generators.
pub fn signed_query(secret: &[u8], body: &[u8]) -> String {
    format!("{PARAMETER}={}", SIGNATURE.sign_hmac(secret, &[body]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "pandadoc-shared-key-0123456789";
    const NOW: i64 = 1_764_633_600;
    const BODY: &[u8] = br#"[{"event":"document_state_changed","data":{"id":"Hzgsfk6EKEZ9HhuDDkrVtm","name":"Sales contract","date_created":"2025-12-01T09:00:00.000000Z","date_modified":"2025-12-02T00:00:00.000000Z","status":"document.completed"}}]"#;
    const DELIVERY: &str = "3f1b9a52-7c1e-4a5e-9d44-0d2b6f1c8e10";

    fn verify_with(
        query: Option<&str>,
        delivery: Option<&str>,
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Pandadoc), SECRET);
        let headers: Headers = delivery.map(|id| (EVENT_ID, id)).into_iter().collect();
        verifier
            .verify(&Request::new(&headers, body).with_query(query), NOW)
            .map_err(|failure| failure.refusal.reason)
    }

    fn query(secret: &str, body: &[u8]) -> String {
        signed_query(secret.as_bytes(), body)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let signed = format!("workspace=ws_1&{}", query(SECRET, BODY));
        let event = verify_with(Some(&signed), Some(DELIVERY), BODY)
            .unwrap()
            .event()
            .unwrap()
            .clone();
        assert_eq!(event.event_id, DELIVERY);
        assert_eq!(event.event_type.as_deref(), Some("document_state_changed"));
        assert_eq!(event.object_id.as_deref(), Some("Hzgsfk6EKEZ9HhuDDkrVtm"));
        assert_eq!(event.created_at, Some(1_764_633_600));
    }

    #[test]
    fn without_the_delivery_header_the_body_names_the_event() {
        let event = verify_with(Some(&query(SECRET, BODY)), None, BODY)
            .unwrap()
            .event()
            .unwrap()
            .clone();
        assert_eq!(event.event_id, envelope::body_fingerprint(BODY));
        assert!(event.event_id.starts_with("sha256:"));
    }

    #[test]
    fn a_mixed_batch_is_typed_batch() {
        let body = br#"[{"event":"recipient_completed","data":{"id":"A"}},{"event":"document_state_changed","data":{"id":"A"}}]"#;
        let event = verify_with(Some(&query(SECRET, body)), Some(DELIVERY), body)
            .unwrap()
            .event()
            .unwrap()
            .clone();
        assert_eq!(event.event_type.as_deref(), Some("batch"));
        assert_eq!(event.object_id.as_deref(), Some("A"));
    }

    #[test]
    fn no_timestamp_is_checked() {
        let signed = query(SECRET, BODY);
        let verifier = test_support::verifier(Box::new(Pandadoc), SECRET);
        let headers = Headers::default();
        let request = Request::new(&headers, BODY).with_query(Some(&signed));
        for now in [0, NOW, NOW + 10 * 365 * 86_400] {
            assert!(verifier.verify(&request, now).is_ok(), "{now}");
        }
    }

    #[test]
    fn refusals() {
        let good = query(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify_with(Some(&good), None, &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_with(Some(&query("other-key", BODY)), None, BODY).unwrap_err(),
            Reason::Signature
        );
        for missing in [None, Some(""), Some("workspace=1"), Some("signature=")] {
            assert_eq!(
                verify_with(missing, None, BODY).unwrap_err(),
                Reason::MissingSignature,
                "{missing:?}"
            );
        }
        let twice = format!("{good}&{good}");
        for malformed in ["signature=zz", "signature=00ff", twice.as_str()] {
            assert_eq!(
                verify_with(Some(malformed), None, BODY).unwrap_err(),
                Reason::MalformedSignature,
                "{malformed}"
            );
        }
        for (body, reason) in [
            (&b"{}"[..], Reason::MalformedBody),
            (b"[]", Reason::MalformedBody),
            (b"[1]", Reason::MalformedBody),
            (b"not json", Reason::MalformedBody),
        ] {
            assert_eq!(
                verify_with(Some(&query(SECRET, body)), Some(DELIVERY), body).unwrap_err(),
                reason
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
            let adapter = Pandadoc;
            let key = adapter.parse_key(SECRET).unwrap();
            let headers = Headers::default();
            let signed = query(SECRET, &body);
            let claim_for = |query: &str, body: &[u8]| {
                adapter
                    .claim(&Request::new(&headers, body).with_query(Some(query)))
                    .map(|claim| claim.is_signed_by(&key))
            };
            prop_assert_eq!(claim_for(&signed, &body), Ok(true));
            let mut changed = body.clone();
            changed[at.index(body.len())] ^= flip;
            prop_assert_eq!(claim_for(&signed, &changed), Ok(false));
            let mut bytes = hex::decode(signed.trim_start_matches("signature=")).unwrap();
            let i = at.index(bytes.len());
            bytes[i] ^= flip;
            let changed_query = format!("signature={}", hex::encode(bytes));
            prop_assert_eq!(claim_for(&changed_query, &body), Ok(false));
        }
    }
}
