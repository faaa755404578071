//! `sumsub` — Sumsub (Sum&Substance) verification webhooks
//! (`X-Payload-Digest`).
//!
//! Follows Sumsub's "Webhooks" pages (docs.sumsub.com/docs/webhook-manager,
//! "Verify webhook sender" and "User verification webhooks"); Sumsub
//! publishes no SDK that verifies.
//!
//! - Headers: `X-Payload-Digest` = hex HMAC of the raw body, keyed with the
//!   webhook's secret key exactly as the Webhook Manager shows it, as UTF-8
//!   bytes; `X-Payload-Digest-Alg` names the hash: `HMAC_SHA1_HEX`,
//!   `HMAC_SHA256_HEX` or `HMAC_SHA512_HEX` (the one the webhook is set
//!   to). Without the algorithm header the digest is SHA-1, Sumsub's
//!   original scheme; any other name is `malformed_signature`. The header
//!   is not signed, but it only picks the HMAC the same secret is checked
//!   with: no choice of it lets a request pass without the secret.
//! - Tolerance: none. Sumsub signs no timestamp.
//! - Event id: Sumsub sends none. Every payload names the `type`
//!   (`applicantReviewed`), the `applicantId` and the time it was made,
//!   `createdAtMs` (`2020-02-21 13:23:19.321`), all signed and the same on a
//!   retry: the id is `"{type}:{applicantId}:{createdAtMs}"` (`createdAt`
//!   where `createdAtMs` is absent). A natural key, not a hash. Without
//!   them: `missing_event_id`.
//! - Type: `type`. Object id: `applicantId`. Created: `createdAt`
//!   (`YYYY-MM-DD hh:mm:ss+0000`). No object version.
//! - Redelivery window: Sumsub retries an unacknowledged webhook four
//!   times, the last about a day after the first; 2 days are kept.

use crate::envelope::{self, Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, SignedMessage, VectorSource,
};

const DIGEST: &str = "X-Payload-Digest";
const DIGEST_ALGORITHM: &str = "X-Payload-Digest-Alg";

/// The digest header for each algorithm Sumsub names.
const SHA1: SignatureHeader<'static> =
    SignatureHeader::hex(DIGEST, Algorithm::HmacSha1).with_length(20);
const SHA256: SignatureHeader<'static> =
    SignatureHeader::hex(DIGEST, Algorithm::HmacSha256).with_length(32);
const SHA512: SignatureHeader<'static> =
    SignatureHeader::hex(DIGEST, Algorithm::HmacSha512).with_length(64);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Sumsub",
    docs_url: "https://docs.sumsub.com/docs/webhook-manager",
    scheme: "HMAC-SHA1/SHA256/SHA512 as `X-Payload-Digest-Alg` says, hex, `X-Payload-Digest`",
    signed_parts: "raw body",
    id_source: "`{type}:{applicantId}:{createdAtMs}` (signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/provb_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Sumsub;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Sumsub))
}

/// The digest header as `X-Payload-Digest-Alg` names it.
fn digest_for(request: &Request<'_>) -> Result<SignatureHeader<'static>, Refusal> {
    match request.headers.get_nonempty(DIGEST_ALGORITHM) {
        None | Some("HMAC_SHA1_HEX") => Ok(SHA1),
        Some("HMAC_SHA256_HEX") => Ok(SHA256),
        Some("HMAC_SHA512_HEX") => Ok(SHA512),
        Some(_) => Err(Refusal::malformed_signature(
            "X-Payload-Digest-Alg is not HMAC_SHA1_HEX, HMAC_SHA256_HEX or HMAC_SHA512_HEX",
        )),
    }
}

impl Adapter for Sumsub {
    fn name(&self) -> &'static str {
        "sumsub"
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

    /// HMAC over the body, from which the id and the type are read.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        // An absent digest is `missing_signature` before the algorithm is read.
        let value = SHA256.value(request.headers)?;
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new().borrowed(request.body),
            candidates: vec![digest_for(request)?.decode(value)?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(
            request.body,
            &["/type", "/applicantId", "/createdAtMs", "/createdAt"],
        )?;
        let created = body.string_at("/createdAt");
        let (Some(kind), Some(applicant), Some(at)) = (
            body.string_at("/type"),
            body.string_at("/applicantId"),
            body.string_at("/createdAtMs").or_else(|| created.clone()),
        ) else {
            return Err(Refusal::missing_event_id(
                "no `type`, `applicantId` and `createdAtMs` to name the event",
            ));
        };
        let event = Envelope::with_id(format!("{kind}:{applicant}:{at}"))?
            .event_type(Some(kind))
            .object_id(Some(applicant))
            .created_at(created.as_deref().and_then(sumsub_time));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(crate::signer::body_hmac(&SHA256, &key, outgoing)?
            .header(DIGEST_ALGORITHM, "HMAC_SHA256_HEX"))
    }
}

/// Sumsub's `createdAt`, `2020-02-21 13:23:19+0000`, in unix seconds: the
/// same instant written as RFC 3339 (`T` for the space, `+00:00`).
fn sumsub_time(text: &str) -> Option<i64> {
    let split = text.len().checked_sub(5)?;
    let (date_time, hours, minutes) = (
        text.get(..split)?,
        text.get(split..split + 3)?,
        text.get(split + 3..)?,
    );
    envelope::rfc3339_seconds(&format!(
        "{}{hours}:{minutes}",
        date_time.replacen(' ', "T", 1)
    ))
}

/// The `X-Payload-Digest` value for `body` under `header`'s algorithm. Used
/// by tests.
pub fn sign(header: &SignatureHeader<'static>, secret: &str, body: &[u8]) -> String {
    header.sign_hmac(secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "fixtureSumsubWebhookSecretKey01";
    const BODY: &[u8] = br#"{"applicantId":"5cb56e8e0a975a35f333cb83","inspectionId":"5cb56e8e0a975a35f333cb84","correlationId":"req-a260b669-4f14-4bb5-a4c5-ac0218acb9a4","externalUserId":"externalUserId","levelName":"basic-kyc-level","type":"applicantReviewed","reviewResult":{"reviewAnswer":"GREEN"},"reviewStatus":"completed","createdAt":"2023-11-14 22:13:20+0000","createdAtMs":"2023-11-14 22:13:20.123"}"#;

    fn verify(pairs: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Sumsub), SECRET);
        let headers: Headers = pairs.iter().copied().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_composed_id() {
        let digest = sign(&SHA256, SECRET, BODY);
        let verified = verify(
            &[(DIGEST, &digest), (DIGEST_ALGORITHM, "HMAC_SHA256_HEX")],
            BODY,
        )
        .unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "applicantReviewed:5cb56e8e0a975a35f333cb83:2023-11-14 22:13:20.123"
        );
        assert_eq!(event.event_type.as_deref(), Some("applicantReviewed"));
        assert_eq!(event.object_id.as_deref(), Some("5cb56e8e0a975a35f333cb83"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn each_named_algorithm_verifies_and_sha1_is_the_default() {
        for (header, name) in [
            (SHA1, Some("HMAC_SHA1_HEX")),
            (SHA1, None),
            (SHA256, Some("HMAC_SHA256_HEX")),
            (SHA512, Some("HMAC_SHA512_HEX")),
        ] {
            let digest = sign(&header, SECRET, BODY);
            let mut pairs = vec![(DIGEST, digest.as_str())];
            pairs.extend(name.map(|name| (DIGEST_ALGORITHM, name)));
            assert!(verify(&pairs, BODY).is_ok(), "{name:?}");
        }
        // A SHA-256 digest announced as SHA-512 is not even the right length.
        let digest = sign(&SHA256, SECRET, BODY);
        assert_eq!(
            verify(
                &[(DIGEST, &digest), (DIGEST_ALGORITHM, "HMAC_SHA512_HEX")],
                BODY
            )
            .unwrap_err(),
            Reason::MalformedSignature
        );
    }

    #[test]
    fn refusals() {
        let digest = sign(&SHA256, SECRET, BODY);
        let alg = (DIGEST_ALGORITHM, "HMAC_SHA256_HEX");
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify(&[(DIGEST, &digest), alg], &tampered).unwrap_err(),
            Reason::Signature
        );
        let wrong = sign(&SHA256, "other", BODY);
        assert_eq!(
            verify(&[(DIGEST, &wrong), alg], BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(&[alg], BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(
                &[(DIGEST, &digest), (DIGEST_ALGORITHM, "HMAC_MD5_HEX")],
                BODY
            )
            .unwrap_err(),
            Reason::MalformedSignature
        );
        let no_applicant =
            br#"{"type":"applicantCreated","createdAtMs":"2023-11-14 22:13:20.123"}"#;
        let digest = sign(&SHA256, SECRET, no_applicant);
        assert_eq!(
            verify(&[(DIGEST, &digest), alg], no_applicant).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            level in any::<String>(),
            secret in "[A-Za-z0-9]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "type": "applicantCreated", "applicantId": "a1",
                "createdAtMs": "2023-11-14 22:13:20.123", "levelName": level
            }))
            .unwrap();
            let signed = Signed::in_header(
                Box::new(Sumsub), &secret, SHA256, &sign(&SHA256, &secret, &body),
                &[(DIGEST_ALGORITHM, "HMAC_SHA256_HEX")],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
