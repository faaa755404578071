//! `sanity` — Sanity GROQ-powered webhooks (`sanity-webhook-signature`).
//!
//! Follows Sanity's "GROQ-powered webhooks" page (sanity.io/docs/webhooks:
//! default headers, secret, retries) and the official toolkit `@sanity/webhook`
//! on npm (`encodeSignatureHeader` / `isValidSignature`).
//!
//! - Header: `sanity-webhook-signature: t=<unix milliseconds>,v1=<base64url>`
//!   (unpadded URL-safe base64, as the toolkit writes it).
//! - Signed bytes: `"{t}.{raw body}"`, HMAC-SHA256 keyed with the webhook's
//!   secret as UTF-8 bytes.
//! - Tolerance: the toolkit checks no age, and Sanity retries a 429 or 5xx
//!   with back-off for up to 30 minutes without saying whether a retry is
//!   signed anew. hookinbox applies one hour in both directions, so retries
//!   pass and a captured request cannot be replayed later than that. The
//!   timestamp is milliseconds; it is floored to seconds.
//! - Event id: header `idempotency-key`, which Sanity sends on every delivery
//!   for de-duplication (the IETF idempotency-key draft). It is **not
//!   signed** (the payload is a user-defined GROQ projection with no id of its
//!   own), so the adapter declares it unsigned: the same body inside the
//!   redelivery window is the same event, whatever key it comes with. The
//!   window (2 hours) is longer than the tolerance, so a signed body can
//!   never come back as a new event.
//! - Type: header `sanity-operation` (`create`, `update`, `delete`),
//!   unsigned. Object id: header `sanity-document-id`. Created: header
//!   `sanity-transaction-time` (RFC 3339). No object version.
//! - Redelivery window: 2 hours (30 minutes of retries, plus the tolerance).

use base64::Engine;

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    encoding, Adapter, Algorithm, BodyCoverage, Candidate, Key, KeyError, Outcome, ProviderFacts,
    Refusal, Request, SignatureClaim, SignatureCoverage, SignedMessage, VectorSource,
};

const SIGNATURE: &str = "sanity-webhook-signature";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Sanity",
    docs_url: "https://www.sanity.io/docs/webhooks",
    scheme: "HMAC-SHA256, unpadded base64url, `sanity-webhook-signature: t=…,v1=…` (t in ms)",
    signed_parts: "`{t}.{body}`",
    id_source: "header `idempotency-key` (unsigned)",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("@sanity/webhook (npm)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Sanity;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Sanity))
}

impl Adapter for Sanity {
    fn name(&self) -> &'static str {
        "sanity"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(3600)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        2 * 3600
    }

    /// HMAC over the timestamp and the body; the id and the operation come
    /// from unsigned headers.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: false,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let (millis, signature) = parse(required(request.headers, SIGNATURE)?)?;
        let seconds = encoding::unix_seconds(millis, "sanity-webhook-signature `t`")? / 1000;
        Ok(SignatureClaim {
            timestamp: Some(seconds),
            message: SignedMessage::new()
                .owned(format!("{millis}."))
                .borrowed(request.body),
            candidates: vec![signature],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let headers = request.headers;
        let id = headers
            .get_nonempty("idempotency-key")
            .ok_or_else(|| Refusal::missing_event_id("no idempotency-key header"))?;
        let event = Envelope::with_id(id)?
            .event_type(headers.get_nonempty("sanity-operation").map(str::to_owned))
            .object_id(
                headers
                    .get_nonempty("sanity-document-id")
                    .map(str::to_owned),
            )
            .created_at(
                headers
                    .get_nonempty("sanity-transaction-time")
                    .and_then(envelope::rfc3339_seconds),
            );
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
            .header("idempotency-key", outgoing.event_id)
            .header(SIGNATURE, sign(&secret, outgoing.now * 1000, outgoing.body)))
    }
}

/// Reads `t=<digits>[, ]v1=<base64url>`, the toolkit's one accepted shape:
/// the timestamp text and the decoded signature.
fn parse(header: &str) -> Result<(&str, Candidate), Refusal> {
    let malformed =
        || Refusal::malformed_signature("sanity-webhook-signature is not `t=<ms>,v1=<base64url>`");
    let rest = header.strip_prefix("t=").ok_or_else(malformed)?;
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(malformed)?;
    let (millis, rest) = rest.split_at(end);
    let signature = rest
        .trim_start_matches([',', ' '])
        .strip_prefix("v1=")
        .filter(|value| !value.is_empty() && !value.contains([',', ' ']))
        .ok_or_else(malformed)?;
    if millis.is_empty() || rest.len() == rest.trim_start_matches([',', ' ']).len() {
        return Err(malformed());
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| malformed())?;
    Ok((millis, Candidate::new(Algorithm::HmacSha256, bytes)))
}

/// Signs a body the way Sanity does and returns the header value
/// `t={millis},v1=<base64url>`. Used by tests and load generators.
pub fn sign(secret: &str, millis: i64, body: &[u8]) -> String {
    let mac =
        crate::signature::hmac_sha256(secret.as_bytes(), &[format!("{millis}.").as_bytes(), body]);
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac);
    format!("t={millis},v1={encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "sanity-webhook-secret";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"_id":"post-1","_type":"post","title":"Hello"}"#;

    fn verify(signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Sanity), SECRET);
        let headers: Headers = [
            ("sanity-webhook-signature", signature),
            ("idempotency-key", "idem-1"),
            ("sanity-operation", "update"),
            ("sanity-document-id", "post-1"),
            ("sanity-transaction-time", "2023-11-14T22:13:20.000Z"),
        ]
        .into_iter()
        .collect();
        test_support::verify(&verifier, &headers, body, NOW)
    }

    #[test]
    fn valid_request_reads_the_headers() {
        let verified = verify(&sign(SECRET, NOW * 1000 + 123, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "idem-1");
        assert_eq!(event.event_type.as_deref(), Some("update"));
        assert_eq!(event.object_id.as_deref(), Some("post-1"));
        assert_eq!(event.created_at, Some(NOW));
        assert_eq!(verified.diagnosis().signed_at, Some(NOW));
    }

    #[test]
    fn one_hour_window_both_directions() {
        test_support::assert_window(NOW, 3600, |seconds| {
            verify(&sign(SECRET, seconds * 1000, BODY), BODY)
        });
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, NOW * 1000, BODY);
        let mut tampered = BODY.to_vec();
        tampered[5] ^= 1;
        assert_eq!(verify(&good, &tampered).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(&sign("other", NOW * 1000, BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        let moved = good.replace(
            &format!("t={}", NOW * 1000),
            &format!("t={}", NOW * 1000 + 1),
        );
        assert_eq!(verify(&moved, BODY).unwrap_err(), Reason::Signature);
        for bad in [
            "v1=abc",
            "t=1",
            "t=1,v1=",
            "t=,v1=abc",
            "t=1v1=abc",
            "t=1,v1=a+b/",
        ] {
            assert_eq!(
                verify(bad, BODY).unwrap_err(),
                Reason::MalformedSignature,
                "{bad}"
            );
        }
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The header parser never panics, and what it reads back is what
        /// `sign` wrote.
        #[test]
        fn any_header_is_parsed_or_refused(header in "[tv1=, 0-9A-Za-z_-]{0,64}") {
            let _ = parse(&header);
        }

        #[test]
        fn signed_headers_parse_back(millis in 0i64..4_000_000_000_000, body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let header = sign(SECRET, millis, &body);
            let (text, candidate) = parse(&header).unwrap();
            prop_assert_eq!(text, millis.to_string());
            prop_assert_eq!(candidate.bytes.len(), 32);
        }
    }
}
