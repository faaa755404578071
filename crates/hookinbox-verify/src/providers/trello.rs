//! `trello` — Trello webhooks (`X-Trello-Webhook`).
//!
//! Follows Trello's "Webhooks" guide (developer.atlassian.com/cloud/trello/
//! guides/rest-api/webhooks, "Webhook Signatures" and "Creating a Webhook").
//!
//! - Header: `X-Trello-Webhook` = standard base64 of an HMAC-SHA1.
//! - Signed bytes: the raw body immediately followed by the webhook's
//!   `callbackURL` exactly as it was given to Trello (`public_url`,
//!   required), keyed with the application's OAuth secret as UTF-8 bytes.
//!   The URL comes from configuration, never from the request.
//! - Tolerance: none. Trello signs no timestamp.
//! - Probe: when a webhook is created Trello sends a `HEAD` to the callback
//!   URL and creates the webhook only on a 200; it is answered with an
//!   empty 200 and nothing else (see [`crate::probe`]).
//! - Event id: body `action.id`, the id of the action that changed the
//!   model, signed. One action is one event; a retry re-sends it.
//! - Type: `action.type` (`updateCard`). Object id: `model.id` (the watched
//!   model). Created: `action.date` (RFC 3339). No object version.
//! - Redelivery window: the guide followed here states no retry span; 24
//!   hours are kept, an assumption to revisit when Trello documents one.

use crate::envelope::{self, Reply};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Probe, ProviderFacts, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, SignedMessage, VectorSource,
};

/// Standard base64 of the HMAC-SHA1 of body + callback URL.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("X-Trello-Webhook", Algorithm::HmacSha1).with_length(20);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Trello",
    docs_url: "https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks/",
    scheme: "HMAC-SHA1, base64, `X-Trello-Webhook`",
    signed_parts: "`{body}{public_url}` (the webhook's callbackURL)",
    id_source: "body `action.id` (signed)",
    handshake: Some("`HEAD` on webhook creation, answered 200"),
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/saas_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug)]
pub struct Trello {
    /// The callbackURL the webhook was created with; part of the signed bytes.
    callback_url: String,
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    let url = settings
        .public_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .ok_or(SettingsError::Missing {
            provider: "trello",
            field: "public_url",
        })?;
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(SettingsError::Invalid {
            field: "public_url",
            message: "expected the absolute callbackURL the Trello webhook was created with".into(),
        });
    }
    Ok(Box::new(Trello {
        callback_url: url.to_owned(),
    }))
}

impl Adapter for Trello {
    fn name(&self) -> &'static str {
        "trello"
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

    /// HMAC over the body (which holds the action id and type) and the URL.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new()
                .borrowed(request.body)
                .owned(self.callback_url.as_bytes()),
            candidates: vec![SIGNATURE.candidate(request.headers)?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let event = envelope::required_id_at(&body, "/action/id")?
            .event_type(envelope::string_at(&body, "/action/type"))
            .object_id(envelope::string_at(&body, "/model/id"))
            .created_at(envelope::rfc3339_at(&body, "/action/date"));
        Ok(Outcome::Event(event))
    }

    fn probe(&self, probe: &Probe<'_>) -> Option<Reply> {
        (probe.method == "HEAD").then(|| Reply::text(Vec::new()))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let signature = SIGNATURE.sign_hmac(secret, &[outgoing.body, self.callback_url.as_bytes()]);
        Ok(crate::signer::SignedRequest::json(outgoing.body).header(SIGNATURE.name, signature))
    }
}

/// Signs a body the way Trello does: base64 HMAC-SHA1 of body + callback
/// URL. Used by tests and load generators.
pub fn sign(secret: &str, callback_url: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body, callback_url.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "trello-oauth-secret";
    const URL: &str = "https://hooks.example.com/hooks/trello";
    const BODY: &[u8] = br#"{"action":{"id":"act-1","type":"updateCard","date":"2023-11-14T22:13:20.000Z","data":{}},"model":{"id":"board-1"}}"#;

    fn adapter(url: Option<&str>) -> Result<Box<dyn Adapter>, SettingsError> {
        build(&AdapterSettings {
            public_url: url.map(str::to_owned),
            ..AdapterSettings::default()
        })
    }

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(adapter(Some(URL)).unwrap(), SECRET);
        let headers: Headers = [("X-Trello-Webhook", header)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, URL, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "act-1");
        assert_eq!(event.event_type.as_deref(), Some("updateCard"));
        assert_eq!(event.object_id.as_deref(), Some("board-1"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let mut tampered = BODY.to_vec();
        tampered[15] ^= 1;
        let good = sign(SECRET, URL, BODY);
        assert_eq!(verify(&good, &tampered).unwrap_err(), Reason::Signature);
        let other_url = sign(SECRET, "https://hooks.example.com/hooks/other", BODY);
        assert_eq!(verify(&other_url, BODY).unwrap_err(), Reason::Signature);
        assert_eq!(verify("abc", BODY).unwrap_err(), Reason::MalformedSignature);
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
    }

    #[test]
    fn the_callback_url_is_required() {
        assert!(matches!(
            adapter(None).unwrap_err(),
            SettingsError::Missing { .. }
        ));
        assert!(matches!(
            adapter(Some("hooks.example.com")).unwrap_err(),
            SettingsError::Invalid { .. }
        ));
    }

    #[test]
    fn head_is_answered_and_get_is_not() {
        let trello = adapter(Some(URL)).unwrap();
        let headers = crate::Headers::new();
        let head = Probe {
            method: "HEAD",
            query: None,
            headers: &headers,
        };
        assert_eq!(trello.probe(&head).unwrap().status, 200);
        let get = Probe {
            method: "GET",
            query: None,
            headers: &headers,
        };
        assert!(trello.probe(&get).is_none());
    }
}
