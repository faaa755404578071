//! `telegram` — Telegram Bot API webhooks, authenticated by their secret token.
//!
//! Follows the Bot API's `setWebhook` (core.telegram.org/bots/api#setwebhook):
//! a webhook set with `secret_token` (1–256 characters `A-Z`, `a-z`, `0-9`,
//! `_`, `-`) receives it in the `X-Telegram-Bot-Api-Secret-Token` header of
//! every request. Nothing is signed.
//!
//! - Header: `X-Telegram-Bot-Api-Secret-Token` = the secret token as is,
//!   compared with every configured secret version in constant time
//!   (`Key::Token`).
//! - Signed bytes: none; whoever holds the token could send any body
//!   (declared [`BodyCoverage::Token`]). TLS protects the body in transit.
//! - Tolerance: none. Telegram sends no timestamp.
//! - Event id: body `update_id`, the update's identifier, which Telegram keeps
//!   when it repeats an unacknowledged update. Not covered by anything: the
//!   adapter declares it unsigned, so hookinbox also de-duplicates by body
//!   fingerprint. Type: the update's one optional field (`message`,
//!   `callback_query`, …). Object id / created / version: none.
//! - Redelivery window: Telegram keeps an unacknowledged update for up to 24
//!   hours, retrying "a reasonable amount of attempts". One day is kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    Adapter, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignedMessage,
};
use crate::{Algorithm, Candidate};

/// The header carrying the webhook's secret token.
const TOKEN_HEADER: &str = "X-Telegram-Bot-Api-Secret-Token";

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Telegram Bot API",
    docs_url: "https://core.telegram.org/bots/api#setwebhook",
    scheme: "shared token, `X-Telegram-Bot-Api-Secret-Token`",
    signed_parts: "none (token)",
    id_source: "body `update_id` (unsigned)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Telegram;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Telegram))
}

impl Adapter for Telegram {
    fn name(&self) -> &'static str {
        "telegram"
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

    /// A token sent as is: it authenticates the request, not the body or what it says.
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
            candidates: vec![Candidate::new(
                Algorithm::Token,
                required(request.headers, TOKEN_HEADER)?.as_bytes().to_vec(),
            )],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let id = envelope::string_at(&body, "/update_id")
            .ok_or_else(|| Refusal::missing_event_id("no `update_id` in the body"))?;
        let kind = body
            .as_object()
            .and_then(|fields| fields.keys().find(|key| *key != "update_id").cloned());
        let event = Envelope::with_id(id)?.event_type(kind);
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        crate::signer::token(TOKEN_HEADER, &key, outgoing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "tg-Secret_token-123";
    const BODY: &[u8] = br#"{"update_id":10000,"message":{"message_id":1365,"date":1700000000,"chat":{"id":1111111,"type":"private"},"text":"/start"}}"#;

    fn verify(credential: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Telegram), SECRET);
        let headers: Headers = credential
            .map(|value| ("X-Telegram-Bot-Api-Secret-Token", value.to_owned()))
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(SECRET), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "10000");
        assert_eq!(event.event_type.as_deref(), Some("message"));
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
        let no_id = br#"{"message":{}}"#;
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
