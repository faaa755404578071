//! `nylas` — Nylas v3 webhook notifications (`x-nylas-signature`).
//!
//! Follows Nylas's "Using webhooks with Nylas" (developer.nylas.com/docs/v3/
//! webhooks: "Respond to the webhook verification request", "Verify webhook
//! signatures").
//!
//! - Header: `x-nylas-signature` = hex HMAC-SHA256 of the raw body, keyed
//!   with the webhook's `webhook_secret` (returned once, when the webhook is
//!   created) as UTF-8 bytes.
//! - Tolerance: none. Nylas signs no timestamp (`time` in the body is the
//!   notification's time).
//! - Probe: when a webhook is created or re-activated, Nylas sends
//!   `GET ?challenge=<value>` and expects the exact value back as the body of
//!   a 200 within 10 s. It is echoed (a plain value only, see
//!   [`crate::probe`]); nothing is stored.
//! - Event id: body `id`, the notification's id, signed.
//! - Type: `type` (`message.created`). Object id: `data.object.id`.
//!   Created: `time` (unix seconds). No object version.
//! - Compressed notifications (`Content-Encoding: gzip`, an opt-in) are not
//!   handled: the signature is over the compressed bytes and the envelope
//!   would need them decompressed.
//! - Redelivery window: the pages followed here state no retry span; 3 days
//!   are kept, an assumption to revisit when Nylas documents one.

use crate::envelope::{self, Reply};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Probe, ProviderFacts, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, VectorSource,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("x-nylas-signature", Algorithm::HmacSha256).with_length(32);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Nylas",
    docs_url: "https://developer.nylas.com/docs/v3/webhooks/",
    scheme: "HMAC-SHA256, hex, `x-nylas-signature`",
    signed_parts: "raw body",
    id_source: "body `id` (signed)",
    handshake: Some("`GET ?challenge=` echoed"),
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/saas_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Nylas;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Nylas))
}

impl Adapter for Nylas {
    fn name(&self) -> &'static str {
        "nylas"
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

    /// HMAC over the body, which holds the id and the type.
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
        let event = envelope::required_id_at(&body, "/id")?
            .event_type(envelope::string_at(&body, "/type"))
            .object_id(envelope::string_at(&body, "/data/object/id"))
            .created_at(envelope::integer_at(&body, "/time"));
        Ok(Outcome::Event(event))
    }

    fn probe(&self, probe: &Probe<'_>) -> Option<Reply> {
        probe.echo_get_parameter("challenge")
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

/// Signs a body the way Nylas does: hex HMAC-SHA256 of the raw body. Used by
/// tests and load generators.
pub fn sign(webhook_secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(webhook_secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "nylas-webhook-secret";
    const BODY: &[u8] = br#"{"specversion":"1.0","type":"message.created","source":"/google/emails/realtime","id":"ntf-1","time":1700000000,"data":{"application_id":"app-1","object":{"id":"msg-1","grant_id":"g-1"}}}"#;

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Nylas), SECRET);
        let headers: Headers = [("x-nylas-signature", header)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "ntf-1");
        assert_eq!(event.event_type.as_deref(), Some("message.created"));
        assert_eq!(event.object_id.as_deref(), Some("msg-1"));
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
    }

    #[test]
    fn the_challenge_get_is_echoed() {
        let headers = Headers::new();
        let probe = |method, query| {
            Nylas.probe(&Probe {
                method,
                query: Some(query),
                headers: &headers,
            })
        };
        let reply = probe("GET", "challenge=bc609b38-c81f-47fb").unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, b"bc609b38-c81f-47fb");
        assert!(probe("HEAD", "challenge=x").is_none());
        assert!(probe("GET", "other=x").is_none());
        assert!(probe("GET", "challenge=%3Cb%3E").is_none());
    }
}
