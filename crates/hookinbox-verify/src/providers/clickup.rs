//! `clickup` — ClickUp webhooks (`X-Signature`).
//!
//! Follows ClickUp's "Webhook signature" and "Task webhook payloads" pages
//! (developer.clickup.com/docs/webhooksignature, /docs/webhooktaskpayloads).
//!
//! - Header: `X-Signature` = hex HMAC-SHA256 of the raw body, keyed with the
//!   `webhook.secret` returned when the webhook was created, as UTF-8 bytes.
//! - Tolerance: none. ClickUp signs no timestamp.
//! - Event id: **ClickUp sends none.** Every payload names its `event` and
//!   carries `history_items`, the changes that triggered it, each with its
//!   own `id`; the id is composed of signed values a retry re-sends
//!   unchanged: `"{event}:{history_items[0].id}"`. The event name is part of
//!   it because ClickUp sends two webhooks for one change (a new task is
//!   reported as `taskCreated` and as `taskStatusUpdated`). A natural key,
//!   not a hash. A payload without `history_items` or without `event` is
//!   `missing_event_id`.
//! - Type: `event` (`taskStatusUpdated`). Object id: `task_id`, else
//!   `list_id`, `folder_id`, `space_id`. Created: `history_items[0].date`
//!   (unix milliseconds, a string). No object version.
//! - Redelivery window: the pages followed here state no retry span; 24
//!   hours are kept, an assumption to revisit when ClickUp documents one.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, VectorSource,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Signature", Algorithm::HmacSha256).with_length(32);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "ClickUp",
    docs_url: "https://developer.clickup.com/docs/webhooksignature",
    scheme: "HMAC-SHA256, hex, `X-Signature`",
    signed_parts: "raw body",
    id_source: "`{event}:{history_items[0].id}` (signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/saas_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct ClickUp;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(ClickUp))
}

impl Adapter for ClickUp {
    fn name(&self) -> &'static str {
        "clickup"
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

    /// HMAC over the body, from which the id and the event are read.
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
        let (Some(event), Some(item)) = (
            envelope::string_at(&body, "/event"),
            envelope::string_at(&body, "/history_items/0/id"),
        ) else {
            return Err(Refusal::missing_event_id(
                "no `event` and `history_items[0].id` to name the event",
            ));
        };
        let object_id = ["/task_id", "/list_id", "/folder_id", "/space_id"]
            .into_iter()
            .find_map(|pointer| envelope::string_at(&body, pointer));
        let created = envelope::string_at(&body, "/history_items/0/date")
            .and_then(|millis| millis.parse::<i64>().ok())
            .map(|millis| millis / 1000);
        let event = Envelope::with_id(format!("{event}:{item}"))?
            .event_type(Some(event))
            .object_id(object_id)
            .created_at(created);
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

/// Signs a body the way ClickUp does: hex HMAC-SHA256 of the raw body. Used
/// by tests and load generators.
pub fn sign(webhook_secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(webhook_secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "clickup-webhook-secret";
    const BODY: &[u8] = br#"{"event":"taskStatusUpdated","history_items":[{"id":"2800763136717140857","type":1,"date":"1700000000123","field":"status"}],"task_id":"1vj37mc","webhook_id":"7fa3ec74"}"#;

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(ClickUp), SECRET);
        let headers: Headers = [("X-Signature", header)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_composed_id() {
        let verified = verify(&sign(SECRET, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "taskStatusUpdated:2800763136717140857");
        assert_eq!(event.event_type.as_deref(), Some("taskStatusUpdated"));
        assert_eq!(event.object_id.as_deref(), Some("1vj37mc"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let mut tampered = BODY.to_vec();
        tampered[40] ^= 1;
        assert_eq!(
            verify(&sign(SECRET, BODY), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&sign("other", BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify("xyz", BODY).unwrap_err(), Reason::MalformedSignature);
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        let no_history = br#"{"event":"listCreated","list_id":"l1","webhook_id":"w1"}"#;
        assert_eq!(
            verify(&sign(SECRET, no_history), no_history).unwrap_err(),
            Reason::MissingEventId
        );
    }
}
