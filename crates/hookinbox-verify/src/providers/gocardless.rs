//! `gocardless` — GoCardless webhook signatures (`Webhook-Signature`).
//!
//! Follows GoCardless's "Staying up-to-date with webhooks" guide and API
//! reference (developer.gocardless.com/api-reference#appendix-webhooks) and the
//! official `gocardless_pro` SDK's `webhooks.parse`.
//!
//! - Header: `Webhook-Signature` = hex HMAC-SHA256 of the raw body, keyed with
//!   the webhook endpoint's secret as UTF-8 bytes.
//! - Signed bytes: the raw body only.
//! - Tolerance: none. GoCardless signs no timestamp.
//! - Batches: one webhook carries a list of `events` that need have nothing
//!   in common. The inbox stores the whole request as **one** event; the
//!   events inside are the consumer's to split (each has its own `id`).
//! - Event id: body `meta.webhook_id` (signed), the id of the webhook, which a
//!   retry of that webhook repeats. Type: `"{resource_type}.{action}"`
//!   (`payments.confirmed`) when every event of the batch shares it, `batch`
//!   otherwise. Object id: the first event's `id`. Created: the first event's
//!   `created_at`. No object version.
//! - GoCardless asks for `498` on a bad signature; hookinbox answers its usual
//!   `401 signature`, which GoCardless treats as a failure all the same.
//! - Redelivery window: failed webhooks are retried and can be resent from the
//!   dashboard; the pages we follow give no window. Seven days are kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("Webhook-Signature", Algorithm::HmacSha256);

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "GoCardless",
    docs_url:
        "https://developer.gocardless.com/getting-started/api/staying-up-to-date-with-webhooks/",
    scheme: "HMAC-SHA256, hex, `Webhook-Signature`",
    signed_parts: "raw body",
    id_source: "body `meta.webhook_id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("gocardless_pro (PyPI)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Gocardless;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Gocardless))
}

impl Adapter for Gocardless {
    fn name(&self) -> &'static str {
        "gocardless"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        7 * 24 * 3600
    }

    /// HMAC over the body, which holds the webhook id and the events.
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
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let id = envelope::string_at(&body, "/meta/webhook_id").ok_or_else(|| {
            Refusal::missing_event_id("no webhook id at `/meta/webhook_id` in the body")
        })?;
        let events = body
            .get("events")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| Refusal::malformed_body("the body has no `events` list"))?;
        let types: Vec<Option<String>> = events
            .iter()
            .map(|event| {
                Some(format!(
                    "{}.{}",
                    envelope::string_at(event, "/resource_type")?,
                    envelope::string_at(event, "/action")?
                ))
            })
            .collect();
        let event_type = match types.first() {
            Some(first) if types.iter().all(|t| t == first) => first.clone(),
            Some(_) => Some("batch".to_owned()),
            None => None,
        };
        let first = events.first();
        let event = Envelope::with_id(id)?
            .event_type(event_type)
            .object_id(first.and_then(|e| envelope::string_at(e, "/id")))
            .created_at(first.and_then(|e| envelope::rfc3339_at(e, "/created_at")));
        Ok(Outcome::Event(event))
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

/// Signs a body the way GoCardless does. Used by tests and load generators.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "gc-endpoint-secret";
    const BODY: &[u8] = br#"{"events":[{"id":"EV123","created_at":"2023-11-14T22:13:20.000Z","action":"confirmed","resource_type":"payments","links":{"payment":"PM123"}},{"id":"EV124","created_at":"2023-11-14T22:13:21.000Z","action":"confirmed","resource_type":"payments","links":{"payment":"PM124"}}],"meta":{"webhook_id":"WB123"}}"#;
    const OTHER_HEADERS: &[(&str, &str)] = &[];

    #[test]
    fn a_batch_of_mixed_events_is_typed_batch() {
        let body = br#"{"events":[{"id":"EV1","action":"created","resource_type":"mandates"},{"id":"EV2","action":"confirmed","resource_type":"payments"}],"meta":{"webhook_id":"WB9"}}"#;
        let verified = verify(Some(&sign(SECRET, body)), body).unwrap();
        assert_eq!(
            verified.event().unwrap().event_type.as_deref(),
            Some("batch")
        );
    }

    fn verify_with(
        signature: Option<&str>,
        others: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Gocardless), SECRET);
        let mut headers: Headers = others.iter().copied().collect();
        if let Some(signature) = signature {
            headers.append(SIGNATURE.name, signature);
        }
        test_support::verify(&verifier, &headers, body, 0)
    }

    fn verify(signature: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        verify_with(signature, OTHER_HEADERS, body)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(&sign(SECRET, BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "WB123");
        assert_eq!(event.event_type.as_deref(), Some("payments.confirmed"));
        assert_eq!(event.object_id.as_deref(), Some("EV123"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[20] ^= 1;
        assert_eq!(
            verify(Some(&good), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(Some(&sign("other", BODY)), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(Some("not-hex"), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_id = br#"{"events":[],"meta":{}}"#;
        assert_eq!(
            verify_with(Some(&sign(SECRET, no_id)), OTHER_HEADERS, no_id).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in prop::collection::vec(any::<u8>(), 1..256),
            secret in "[A-Za-z0-9_-]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = Signed::in_header(
                Box::new(Gocardless), &secret, SIGNATURE, &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
