//! `onfido` — Onfido (Entrust Identity Verification) webhook signatures
//! (`X-SHA2-Signature`).
//!
//! Follows Onfido's "Webhooks" reference (documentation.onfido.com/api/
//! latest/#webhooks, "Verifying webhook signatures") and
//! `WebhookEventVerifier.readPayload` of the official Node SDK (`@onfido/api`
//! on npm): hex HMAC-SHA256 of the raw body.
//!
//! - Header: `X-SHA2-Signature` = hex HMAC-SHA256 of the raw body, keyed with
//!   the webhook's token (returned when the webhook is registered) as UTF-8
//!   bytes. The legacy SHA-1 `X-Signature` is not accepted.
//! - Tolerance: none. Onfido signs no timestamp.
//! - Body: `{"payload":{"resource_type":…,"action":…,"object":{"id":…,
//!   "status":…,"completed_at_iso8601":…,"href":…}}}`.
//! - Event id: **Onfido sends none.** The id is composed of signed values
//!   that a retry re-sends unchanged: `"{action}:{object.id}"`, then
//!   `":{object.completed_at_iso8601}"` where present — one action on one
//!   resource, at one completion. A natural key, not a hash: if Onfido sent
//!   the same action on the same resource twice with the same completion
//!   time but a different body, the second would be refused as a `conflict`
//!   (409), visibly. No `action` or `object.id` → `missing_event_id`.
//! - Type: `action` (`check.completed`). Object id: `object.id`. Created:
//!   `object.completed_at_iso8601` (RFC 3339). No object version.
//! - Redelivery window: the reference followed here states no retry span; 3
//!   days are kept, an assumption to revisit when Onfido documents one.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, VectorSource,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-SHA2-Signature", Algorithm::HmacSha256).with_length(32);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Onfido",
    docs_url: "https://documentation.onfido.com/api/latest/#webhooks",
    scheme: "HMAC-SHA256, hex, `X-SHA2-Signature`",
    signed_parts: "raw body",
    id_source: "`{payload.action}:{payload.object.id}[:{completed_at_iso8601}]` (signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("@onfido/api (npm)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Onfido;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Onfido))
}

impl Adapter for Onfido {
    fn name(&self) -> &'static str {
        "onfido"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3 * 24 * 3600
    }

    /// HMAC over the body, from which the id and the action are read.
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
        let action = envelope::string_at(&body, "/payload/action");
        let object_id = envelope::string_at(&body, "/payload/object/id");
        let completed = envelope::string_at(&body, "/payload/object/completed_at_iso8601");
        let (Some(action), Some(object_id)) = (action, object_id) else {
            return Err(Refusal::missing_event_id(
                "no `payload.action` and `payload.object.id` to name the event",
            ));
        };
        let id = match &completed {
            Some(completed) => format!("{action}:{object_id}:{completed}"),
            None => format!("{action}:{object_id}"),
        };
        let event = Envelope::with_id(id)?
            .event_type(Some(action))
            .object_id(Some(object_id))
            .created_at(completed.as_deref().and_then(envelope::rfc3339_seconds));
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

/// Signs a body the way Onfido does: hex HMAC-SHA256 of the raw body. Used
/// by tests and load generators.
pub fn sign(webhook_token: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(webhook_token.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const TOKEN: &str = "onfido-webhook-token";
    const BODY: &[u8] = br#"{"payload":{"resource_type":"check","action":"check.completed","object":{"id":"chk-1","status":"complete","completed_at_iso8601":"2023-11-14T22:13:20Z","href":"https://api.onfido.com/v3.6/checks/chk-1"}}}"#;

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Onfido), TOKEN);
        let headers: Headers = [("X-SHA2-Signature", header)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_composed_id() {
        let verified = verify(&sign(TOKEN, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "check.completed:chk-1:2023-11-14T22:13:20Z");
        assert_eq!(event.event_type.as_deref(), Some("check.completed"));
        assert_eq!(event.object_id.as_deref(), Some("chk-1"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        let started = br#"{"payload":{"resource_type":"check","action":"check.started","object":{"id":"chk-1","status":"in_progress"}}}"#;
        let verified = verify(&sign(TOKEN, started), started).unwrap();
        assert_eq!(verified.event().unwrap().event_id, "check.started:chk-1");
    }

    #[test]
    fn refusals() {
        let mut tampered = BODY.to_vec();
        tampered[40] ^= 1;
        assert_eq!(
            verify(&sign(TOKEN, BODY), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&sign("other", BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify("xyz", BODY).unwrap_err(), Reason::MalformedSignature);
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        let no_object = br#"{"payload":{"action":"check.completed"}}"#;
        assert_eq!(
            verify(&sign(TOKEN, no_object), no_object).unwrap_err(),
            Reason::MissingEventId
        );
    }
}
