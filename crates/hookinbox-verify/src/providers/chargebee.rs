//! `chargebee` — Chargebee webhooks, authenticated by HTTP Basic credentials.
//!
//! Follows Chargebee's "Webhooks" settings page (chargebee.com/docs/2.0/webhook_settings.html,
//! "Basic authentication"): **Chargebee signs nothing**. The one proof of
//! origin it offers is the user name and password set on the webhook, sent
//! as HTTP Basic auth.
//!
//! - Credential: `Authorization: Basic base64(username:password)`. The
//!   configured secret is that `username:password`, exactly as set in
//!   Chargebee (see [`crate::basic_credentials`]), compared in constant time.
//!   An endpoint therefore cannot start without it, and there is no weaker
//!   mode: a request without the credentials is `missing_signature`.
//! - Signed bytes: none. Whoever holds the credentials could send any body
//!   (declared [`BodyCoverage::Token`]); TLS protects the body in transit.
//! - Tolerance: none. No timestamp is signed.
//! - Event id: body `id` (`ev_…`), the event's id, repeated by Chargebee's
//!   retries. Nothing binds it, so the adapter declares it unsigned and
//!   hookinbox also de-duplicates by body fingerprint. Type: `event_type`
//!   (`subscription_created`). Created: `occurred_at` (unix seconds). No
//!   object id or version is claimed.
//! - Redelivery window: failed webhooks are retried with backoff and can be
//!   resent from the dashboard; three days are kept.

use crate::basic_credentials;
use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignedMessage,
};

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Chargebee",
    docs_url: "https://www.chargebee.com/docs/2.0/webhook_settings.html",
    scheme: "no signature: HTTP Basic credentials (`username:password` is the endpoint secret)",
    signed_parts: "none (the credentials authenticate the request)",
    id_source: "body `id` (unsigned)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Chargebee;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Chargebee))
}

impl Adapter for Chargebee {
    fn name(&self) -> &'static str {
        "chargebee"
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

    /// Chargebee signs nothing: the Basic credentials authenticate the request,
    /// not the body or what it says.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Token,
            event_id: false,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::token_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new(),
            candidates: vec![basic_credentials::candidate(request.headers)?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let id = envelope::string_at(&body, "/id")
            .ok_or_else(|| Refusal::missing_event_id("no event id at `/id` in the body"))?;
        let event = Envelope::with_id(id)?
            .event_type(envelope::string_at(&body, "/event_type"))
            .created_at(envelope::integer_at(&body, "/occurred_at"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let credentials = String::from_utf8_lossy(crate::signer::shared_secret(&key)?).into_owned();
        Ok(crate::signer::SignedRequest::json(outgoing.body).header(
            "Authorization",
            basic_credentials::header_value(&credentials),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "hookinbox:chargebee-webhook-password";
    const BODY: &[u8] = br#"{"id":"ev_16BPgETyVrQbiGhA","occurred_at":1700000000,"source":"admin_console","object":"event","api_version":"v2","content":{"subscription":{"id":"sub_1"}},"event_type":"subscription_created"}"#;

    fn verify(credential: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Chargebee), SECRET);
        let headers: Headers = credential
            .map(|value| ("Authorization", basic_credentials::header_value(value)))
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(SECRET), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "ev_16BPgETyVrQbiGhA");
        assert_eq!(event.event_type.as_deref(), Some("subscription_created"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        assert!(verified.unsigned_metadata().event_id);
    }

    #[test]
    fn refusals() {
        assert_eq!(verify(Some("other"), BODY).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(Some(&format!("{SECRET}x")), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        let no_id = br#"{"event_type":"subscription_created"}"#;
        assert_eq!(
            verify(Some(SECRET), no_id).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(Some(SECRET), b"not json").unwrap_err(),
            Reason::MalformedBody
        );
    }
}
