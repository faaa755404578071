//! `postmark` — Postmark webhooks, authenticated by HTTP Basic credentials.
//!
//! Follows Postmark's "Webhooks overview" (postmarkapp.com/developer/webhooks/webhooks-overview,
//! "Protecting your webhook"): **Postmark signs nothing**; it recommends
//! putting basic-auth credentials in the webhook URL
//! (`https://user:password@host/…`), which it sends as HTTP Basic auth.
//!
//! - Credential: `Authorization: Basic base64(username:password)`. The
//!   configured secret is that `username:password`, exactly as in the URL
//!   given to Postmark (see [`crate::basic_credentials`]), compared in
//!   constant time. An endpoint cannot start without it; a request without
//!   the credentials is `missing_signature`.
//! - Signed bytes: none. Whoever holds the credentials could send any body
//!   (declared [`BodyCoverage::Token`]).
//! - Tolerance: none. No timestamp is signed.
//! - Event id: Postmark sends no event id: a delivery, bounce, open or click
//!   webhook names the message (`MessageID`), and one message has many opens
//!   and clicks. A retry resends the same payload, so the id is the body's
//!   fingerprint: `sha256:` and the hex SHA-256 of the raw body. It is not
//!   covered by anything (declared unsigned). Type: `RecordType`
//!   (`Delivery`, `Bounce`, `Open`, …; absent on inbound-message webhooks).
//!   Object id: `MessageID`. No creation time or object version is claimed.
//! - Redelivery window: a failed webhook is retried over about ten hours;
//!   one day is kept.

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
    title: "Postmark",
    docs_url: "https://postmarkapp.com/developer/webhooks/webhooks-overview",
    scheme: "no signature: HTTP Basic credentials (`username:password` is the endpoint secret)",
    signed_parts: "none (the credentials authenticate the request)",
    id_source: "body fingerprint (SHA-256 of the body; unsigned)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Postmark;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Postmark))
}

impl Adapter for Postmark {
    fn name(&self) -> &'static str {
        "postmark"
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

    /// Postmark signs nothing: the Basic credentials authenticate the request,
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
        if !body.is_object() {
            return Err(Refusal::missing_event_id("the body is not a JSON object"));
        }
        let event = Envelope::with_id(body_fingerprint(request.body))?
            .event_type(envelope::string_at(&body, "/RecordType"))
            .object_id(envelope::string_at(&body, "/MessageID"));
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

/// The id of an event Postmark gives no id: `sha256:` and the hex SHA-256
/// of the body.
fn body_fingerprint(body: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(body)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "hookinbox:postmark-webhook-password";
    const BODY: &[u8] = br#"{"RecordType":"Delivery","ServerID":23,"MessageStream":"outbound","MessageID":"00000000-0000-0000-0000-000000000000","Recipient":"john@example.com","DeliveredAt":"2023-11-14T22:13:20Z"}"#;

    fn verify(credential: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Postmark), SECRET);
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
        assert_eq!(event.event_id, body_fingerprint(BODY));
        assert_eq!(event.event_type.as_deref(), Some("Delivery"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("00000000-0000-0000-0000-000000000000")
        );
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
        let no_id = br#"[1]"#;
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
