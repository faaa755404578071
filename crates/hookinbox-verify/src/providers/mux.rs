//! `mux` — Mux webhook signatures.
//!
//! Follows Mux's "Verify webhook signatures" guide (docs.mux.com): the
//! `Mux-Signature` header holds `t=<unix seconds>` and `v1=<hex>`, the
//! HMAC-SHA256 of `"{t}.{raw body}"` keyed with the endpoint's signing
//! secret; Mux's SDKs allow five minutes.
//!
//! - Header: `Mux-Signature: t=<unix seconds>,v1=<hex>`; items of other
//!   schemes (`v2`, …) are ignored, any `v1` item may match. No `t`:
//!   `malformed_signature`; no `v1`: `signature`.
//! - Signed bytes: `"{t}.{raw body}"`, secret as UTF-8 bytes.
//! - Tolerance: 300 s in both directions (the SDKs' default).
//! - Event id: body `id`, the event's id, the same on every retry. Signed.
//!   Type: body `type` (`video.asset.ready`). Object id: `object.id`.
//!   Created: `created_at` (RFC 3339). No object version.
//! - Redelivery window: Mux retries an unacknowledged webhook for up to 24
//!   hours.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureList, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

/// `t=<unix seconds>` and hex HMAC-SHA256 `v1` signatures of `"{t}.{body}"`.
const SIGNATURE: SignatureList<'static> = SignatureList {
    name: "Mux-Signature",
    separator: ',',
    timestamp_key: "t",
    signature_key: "v1",
    algorithm: Algorithm::HmacSha256,
};

#[derive(Debug, Default)]
pub struct Mux;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Mux))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Mux",
    docs_url: "https://docs.mux.com/core/verify-webhook-signatures",
    scheme: "HMAC-SHA256, hex, `Mux-Signature: t=…,v1=…`",
    signed_parts: "`{t}.{body}`",
    id_source: "body `id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Mux {
    fn name(&self) -> &'static str {
        "mux"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// HMAC over `t` and the body, which holds the id and the type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let listed = SIGNATURE.read(request.headers)?;
        let timestamp = *listed
            .timestamps
            .last()
            .ok_or_else(|| Refusal::malformed_signature("Mux-Signature has no `t`"))?;
        if listed.candidates.is_empty() {
            return Err(Refusal::signature("Mux-Signature has no v1 signature"));
        }
        Ok(SignatureClaim {
            timestamp: Some(timestamp),
            message: SignedMessage::new()
                .owned(format!("{timestamp}."))
                .borrowed(request.body),
            candidates: listed.candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let event = envelope::required_id_at(&body, "/id")?
            .event_type(envelope::string_at(&body, "/type"))
            .object_id(envelope::string_at(&body, "/object/id"))
            .created_at(envelope::rfc3339_at(&body, "/created_at"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = String::from_utf8_lossy(crate::signer::shared_secret(&key)?).into_owned();
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header("Mux-Signature", sign(&secret, outgoing.now, outgoing.body)))
    }
}

/// Signs a body the way Mux does: `t=<ts>,v1=<hex HMAC-SHA256 of "{ts}.{body}">`.
/// Used by tests.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mac = crate::signature::hmac_sha256(
        secret.as_bytes(),
        &[format!("{timestamp}.").as_bytes(), body],
    );
    format!("t={timestamp},v1={}", hex::encode(mac))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "mux-test-secret";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"id":"ev-1","type":"video.asset.ready","object":{"id":"asset-1"},"created_at":"2023-11-14T22:13:20Z"}"#;

    fn verify(signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let headers: Headers = [("Mux-Signature", signature)].into_iter().collect();
        let verifier = test_support::verifier(Box::new(Mux), SECRET);
        test_support::verify(&verifier, &headers, body, NOW)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, NOW, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "ev-1");
        assert_eq!(event.event_type.as_deref(), Some("video.asset.ready"));
        assert_eq!(event.object_id.as_deref(), Some("asset-1"));
        assert_eq!(event.created_at, Some(NOW));
    }

    #[test]
    fn timestamp_window_edges_both_ways() {
        test_support::assert_window(NOW, 300, |ts| verify(&sign(SECRET, ts, BODY), BODY));
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, NOW, BODY);
        let mut tampered = BODY.to_vec();
        tampered[3] ^= 1;
        assert_eq!(verify(&good, &tampered).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(&sign("other", NOW, BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify("v1=00", BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify(&format!("t={NOW}"), BODY).unwrap_err(),
            Reason::Signature
        );
        // Another scheme's item beside the v1 one is ignored.
        let with_v2 = format!("{good},v2=abcd");
        assert!(verify(&with_v2, BODY).is_ok());
    }
}
