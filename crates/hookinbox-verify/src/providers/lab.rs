//! `lab` — the minimal scheme (docs/architecture.md §3), used by the examples and the benchmark.
//!
//! - Headers: `X-Timestamp` (integer unix seconds), `X-Signature` (lower- or
//!   upper-case hex).
//! - Signed bytes: `"{timestamp}.{raw body}"`, HMAC-SHA256 keyed with the
//!   secret string's bytes.
//! - Tolerance: 300 s, both directions. A timestamp that is not an integer is
//!   a `timestamp` refusal.
//! - Event id: body `id` (string or number), stable across retries by
//!   definition of the scheme. Type: body `type` if present. Object: body
//!   `object_id` / `object_version` if present.
//! - Redelivery window: 3 days (a convention for tests; no real sender).

use crate::envelope::JsonFields;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// Hex HMAC-SHA256 of `"{timestamp}.{body}"`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Signature", Algorithm::HmacSha256);
const TIMESTAMP: &str = "X-Timestamp";

#[derive(Debug, Default)]
pub struct Lab;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Lab))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "lab (hookinbox's minimal scheme)",
    docs_url: "docs/architecture.md",
    scheme: "HMAC-SHA256, hex, `X-Signature` with `X-Timestamp`",
    signed_parts: "`{timestamp}.{body}`",
    id_source: "body `id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Lab {
    fn name(&self) -> &'static str {
        "lab"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3 * 24 * 3600
    }

    /// HMAC over the timestamp and the body, which holds the id and the type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret)
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.timestamped_claim(request, TIMESTAMP, |t| format!("{}.", t.seconds))
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(
            request.body,
            &["/id", "/type", "/object_id", "/object_version"],
        )?;
        let event = body
            .required_id_at("/id")?
            .event_type(body.string_at("/type"))
            .object_id(body.string_at("/object_id"))
            .object_version(body.integer_at("/object_version"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let timestamp = outgoing.now.to_string();
        let signature =
            SIGNATURE.sign_hmac(secret, &[format!("{timestamp}.").as_bytes(), outgoing.body]);
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(TIMESTAMP, timestamp)
            .header(SIGNATURE.name, signature))
    }
}

/// Signs a body the way a `lab` sender does: hex HMAC-SHA256 of `"{timestamp}.{body}"`.
/// Used by tests, the benchmark's load generator and the README example.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(
        secret.as_bytes(),
        &[format!("{timestamp}.").as_bytes(), body],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    fn verify(ts: &str, sig: &str, body: &[u8], now: i64) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Lab), "s3cret");
        let headers: Headers = [("X-Timestamp", ts), ("X-Signature", sig)]
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, now)
    }

    #[test]
    fn signed_request_verifies_and_reads_the_id() {
        let body = br#"{"id":"e1","type":"t"}"#;
        let verified = verify("1000", &sign("s3cret", 1000, body), body, 1000).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "e1");
        assert_eq!(event.event_type.as_deref(), Some("t"));
        assert_eq!(verified.matched_secret_version(), "1");
        assert!(verified.unsigned_metadata().is_empty());
    }

    #[test]
    fn window_edges() {
        let body = br#"{"id":"e1"}"#;
        test_support::assert_window(1000, 300, |ts| {
            verify(&ts.to_string(), &sign("s3cret", ts, body), body, 1000)
        });
    }

    #[test]
    fn missing_id_after_valid_signature_is_missing_event_id() {
        let body = br#"{"amount":1}"#;
        let err = verify("1000", &sign("s3cret", 1000, body), body, 1000).unwrap_err();
        assert_eq!(err, Reason::MissingEventId);
        let body = b"not json";
        let err = verify("1000", &sign("s3cret", 1000, body), body, 1000).unwrap_err();
        assert_eq!(err, Reason::MalformedBody);
    }
}
