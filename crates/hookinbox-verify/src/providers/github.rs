//! `github` — GitHub repository, organisation and App webhooks.
//!
//! - Header: `X-Hub-Signature-256: sha256=<hex>` (either hex case). The legacy
//!   `X-Hub-Signature: sha1=<hex>` is not accepted, even alone: GitHub sends
//!   both on every delivery, so a request that carries only the SHA-1 one was
//!   not sent by GitHub as-is, and SHA-1 is the weaker MAC. Such a request is
//!   refused as `missing_signature`.
//! - Signed bytes: the raw body, exactly as received (JSON or
//!   `application/x-www-form-urlencoded` `payload=…`; both are signed alike).
//! - Algorithm and key: HMAC-SHA256 keyed with the secret string's own bytes.
//! - Tolerance: none. GitHub signs no timestamp, so a captured delivery stays
//!   valid; dedup is what stops a replay from creating a second event.
//! - Event id: the `X-GitHub-Delivery` header (a GUID). It is covered by no
//!   signature: whoever holds one signed delivery could re-submit its body
//!   under a new id. So the adapter declares the id unsigned, and hookinbox
//!   takes the same body on the same endpoint within the redelivery window
//!   as the same event. The id is checked after verification, so a missing
//!   one is `missing_event_id`. GitHub keeps the
//!   same delivery id when a delivery is redelivered, so it is stable across
//!   redeliveries.
//! - Type: the `X-GitHub-Event` header (`push`, `check_run`, `ping`, …). The
//!   body's `action` is not folded in, so type allowlists match GitHub's event
//!   names as documented. The body is not parsed: everything the envelope
//!   needs is in headers, and a `ping` (sent when a hook is created) is an
//!   ordinary event — it needs only a 2xx, no special reply.
//! - Object id / version: none (payloads differ per event; no version is
//!   trustworthy across them).
//! - Redelivery window: 3 days. GitHub never retries on its own; an operator
//!   (or a script using the REST API) can redeliver any delivery from the past
//!   3 days, with the same delivery id.

use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Envelope, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// `sha256=` and the hex HMAC-SHA256 of the raw body: 32 bytes, or malformed.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Hub-Signature-256", Algorithm::HmacSha256)
        .with_prefix("sha256=")
        .with_length(32);

#[derive(Debug, Default)]
pub struct Github;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Github))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "GitHub",
    docs_url: "https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries",
    scheme: "HMAC-SHA256, hex, `X-Hub-Signature-256: sha256=…`",
    signed_parts: "raw body",
    id_source: "header `X-GitHub-Delivery`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("@octokit/webhooks-methods (npm)"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Github {
    fn name(&self) -> &'static str {
        "github"
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

    /// HMAC over the body only: `X-GitHub-Delivery` (the id) and `X-GitHub-Event`
    /// (the type) are unsigned headers.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: false,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret)
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        // Name the SHA-1 header too: a request carrying only that one is a
        // common mistake, and it is refused on purpose.
        if request.headers.get_nonempty(SIGNATURE.name).is_none() {
            return Err(Refusal::missing_signature(
                "no X-Hub-Signature-256 header (X-Hub-Signature alone is not accepted)",
            ));
        }
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let delivery = request
            .headers
            .get_nonempty("x-github-delivery")
            .ok_or_else(|| Refusal::missing_event_id("no X-GitHub-Delivery header"))?;
        let event = Envelope::with_id(delivery)?.event_type(
            request
                .headers
                .get_nonempty("x-github-event")
                .map(str::to_owned),
        );
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(crate::signer::body_hmac(&SIGNATURE, &key, outgoing)?
            .header("X-GitHub-Delivery", outgoing.event_id))
    }
}

/// Signs a body the way GitHub does: the `X-Hub-Signature-256` value
/// `sha256=<lower-case hex HMAC-SHA256 of the body>`. For tests and examples.
pub fn sign(secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "It's a shared Secret";
    const BODY: &[u8] = br#"{"action":"completed","check_run":{"id":1}}"#;

    fn headers(signature: Option<&str>, delivery: Option<&str>) -> Headers {
        let mut h = Headers::new();
        if let Some(signature) = signature {
            h.append("X-Hub-Signature-256", signature);
        }
        if let Some(delivery) = delivery {
            h.append("X-GitHub-Delivery", delivery);
        }
        h.append("X-GitHub-Event", "check_run");
        h
    }

    fn verify_at(h: &Headers, body: &[u8], now: i64) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Github), SECRET);
        test_support::verify(&verifier, h, body, now)
    }

    fn verify(h: &Headers, body: &[u8]) -> Result<Verified, Reason> {
        verify_at(h, body, 1_700_000_000)
    }

    #[test]
    fn signed_delivery_verifies_with_headers_as_envelope() {
        let h = headers(Some(&sign(SECRET, BODY)), Some("guid-1"));
        let verified = verify(&h, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "guid-1");
        assert_eq!(event.event_type.as_deref(), Some("check_run"));
        // Both come from headers the signature does not cover.
        assert_eq!(
            verified.unsigned_metadata(),
            crate::UnsignedMetadata {
                event_id: true,
                event_type: true
            }
        );
    }

    #[test]
    fn upper_case_hex_verifies() {
        let signature = sign(SECRET, BODY);
        let upper = format!("sha256={}", signature["sha256=".len()..].to_uppercase());
        let h = headers(Some(&upper), Some("guid-1"));
        assert!(verify(&h, BODY).is_ok());
    }

    #[test]
    fn no_timestamp_means_no_freshness_check() {
        let h = headers(Some(&sign(SECRET, BODY)), Some("guid-1"));
        assert!(verify_at(&h, BODY, i64::MAX).is_ok());
    }

    #[test]
    fn tampered_byte_is_refused() {
        let h = headers(Some(&sign(SECRET, BODY)), Some("guid-1"));
        let mut body = BODY.to_vec();
        body[3] ^= 1;
        assert_eq!(verify(&h, &body).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn wrong_secret_is_refused() {
        let h = headers(Some(&sign("another secret", BODY)), Some("guid-1"));
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn missing_signature_and_sha1_alone() {
        let h = headers(None, Some("guid-1"));
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::MissingSignature);
        let mut h = headers(None, Some("guid-1"));
        h.append(
            "X-Hub-Signature",
            "sha1=2d0ed17e3c6b33ca17210283b7fb4935e37f74e2",
        );
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::MissingSignature);
    }

    #[test]
    fn malformed_signatures() {
        let hex = &sign(SECRET, BODY)["sha256=".len()..];
        for bad in [
            hex.to_owned(),
            format!("sha1={hex}"),
            format!("SHA256={hex}"),
            "sha256=zz".to_owned(),
            format!("sha256={}", &hex[..62]),
        ] {
            let h = headers(Some(&bad), Some("guid-1"));
            assert_eq!(
                verify(&h, BODY).unwrap_err(),
                Reason::MalformedSignature,
                "{bad}"
            );
        }
    }

    #[test]
    fn missing_delivery_id_is_checked_after_verification() {
        let h = headers(Some(&sign(SECRET, BODY)), None);
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::MissingEventId);
        // An unverified request says nothing about its id.
        let h = headers(Some(&sign("another secret", BODY)), None);
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::Signature);
    }
}
