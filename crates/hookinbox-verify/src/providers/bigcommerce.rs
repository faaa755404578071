//! `bigcommerce` — BigCommerce webhooks, authenticated by HTTP Basic
//! credentials.
//!
//! Follows BigCommerce's "Webhooks overview" and "Create a webhook" API
//! reference (developer.bigcommerce.com/docs/integrations/webhooks):
//! **BigCommerce signs nothing**. What it offers instead is `headers`: custom
//! headers set when the webhook is created, which it sends with every
//! callback. Set `"headers": {"Authorization": "Basic base64(username:password)"}`
//! there; that credential is the endpoint's secret.
//!
//! - Credential: `Authorization: Basic base64(username:password)`. The
//!   configured secret is that `username:password` (see
//!   [`crate::basic_credentials`]), compared in constant time. An endpoint
//!   cannot start without it (there is no weaker mode), and a request
//!   without the credentials is `missing_signature`.
//! - Signed bytes: none. Whoever holds the credentials could send any body
//!   (declared [`BodyCoverage::Token`]); TLS protects it in transit.
//! - Tolerance: none. No timestamp is signed.
//! - Event id: BigCommerce sends none; the payload is `scope`, `store_id`,
//!   `data` (`type` and `id` of the changed object), `hash` (a SHA-1 of the
//!   payload data), `created_at` (unix seconds) and `producer`, resent
//!   unchanged on retry. The id is composed of them:
//!   `"{scope}:{created_at}:{hash}"`; nothing binds it, so it is declared
//!   unsigned and hookinbox also de-duplicates by body fingerprint. Without
//!   one of the three: `missing_event_id`.
//! - Type: `scope` (`store/order/created`). Object id: `data.id`. Created:
//!   `created_at`. No object version.
//! - Redelivery window: BigCommerce retries a failed callback with growing
//!   intervals and deactivates the webhook after about two days of failures;
//!   two days are kept.

use crate::basic_credentials;
use crate::envelope::{Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, BodyCoverage, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignedMessage, VectorSource,
};

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "BigCommerce",
    docs_url: "https://developer.bigcommerce.com/docs/integrations/webhooks",
    scheme: "no signature: HTTP Basic credentials sent from the webhook's `headers` (`username:password` is the endpoint secret)",
    signed_parts: "none (the credentials authenticate the request)",
    id_source: "`{scope}:{created_at}:{hash}` from the body",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/ops_commerce_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

const SCOPE: &str = "/scope";
const CREATED: &str = "/created_at";
const HASH: &str = "/hash";
const OBJECT: &str = "/data/id";

#[derive(Debug, Default)]
pub struct BigCommerce;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(BigCommerce))
}

impl Adapter for BigCommerce {
    fn name(&self) -> &'static str {
        "bigcommerce"
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

    /// BigCommerce signs nothing: the Basic credentials authenticate the
    /// request, not the body or what it says.
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
        let fields = JsonFields::read(request.body, &[SCOPE, CREATED, HASH, OBJECT])?;
        let (Some(scope), Some(created), Some(hash)) = (
            fields.string_at(SCOPE),
            fields.integer_at(CREATED),
            fields.string_at(HASH),
        ) else {
            return Err(Refusal::missing_event_id(
                "no `scope`, `created_at` and `hash` to name the callback",
            ));
        };
        let event = Envelope::with_id(format!("{scope}:{created}:{hash}"))?
            .event_type(Some(scope))
            .object_id(fields.string_at(OBJECT))
            .created_at(Some(created));
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

    const SECRET: &str = "hookinbox:bigcommerce-callback-password";
    const BODY: &[u8] = br#"{"created_at":1700000000,"store_id":"1025646","producer":"stores/abc123","scope":"store/order/created","hash":"dd70c0976e06b67aaa9b1b4b1ab0e8d39d3a7148","data":{"type":"order","id":250}}"#;

    fn verify(credential: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(BigCommerce), SECRET);
        let mut headers = Headers::new();
        if let Some(credential) = credential {
            headers.append("Authorization", basic_credentials::header_value(credential));
        }
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_composes_the_id() {
        let verified = verify(Some(SECRET), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "store/order/created:1700000000:dd70c0976e06b67aaa9b1b4b1ab0e8d39d3a7148"
        );
        assert_eq!(event.event_type.as_deref(), Some("store/order/created"));
        assert_eq!(event.object_id.as_deref(), Some("250"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        let unsigned = verified.unsigned_metadata();
        assert!(unsigned.event_id && unsigned.event_type);
    }

    #[test]
    fn nothing_is_signed_so_an_endpoint_needs_its_credential() {
        let coverage = BigCommerce.coverage();
        assert_eq!(coverage.body, BodyCoverage::Token);
        // The credential is the endpoint's own secret: a changed body is accepted.
        let mut changed = BODY.to_vec();
        changed[15] = b'8';
        assert!(verify(Some(SECRET), &changed).is_ok());
    }

    #[test]
    fn refusals() {
        assert_eq!(
            verify(Some("hookinbox:other"), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        let no_hash = br#"{"created_at":1700000000,"scope":"store/order/created","data":{"type":"order","id":250}}"#;
        assert_eq!(
            verify(Some(SECRET), no_hash).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(Some(SECRET), b"not json").unwrap_err(),
            Reason::MalformedBody
        );
    }
}
