//! `airtable` — Airtable webhook notification pings (`X-Airtable-Content-MAC`).
//!
//! Follows Airtable's "Webhooks overview" (airtable.com/developers/web/api/
//! webhooks-overview, "Notification delivery" and its `expectedContentHmac`
//! sample).
//!
//! - Header: `X-Airtable-Content-MAC: hmac-sha256=<hex>`; the prefix is
//!   required.
//! - Signed bytes: the raw body, HMAC-SHA256 keyed with the *base64-decoded*
//!   `macSecretBase64` that the create-webhook call returned once. Configure
//!   that base64 string as returned; it is decoded when the key is parsed.
//! - Tolerance: none. The ping's `timestamp` is signed but Airtable documents
//!   no window for it, and retries re-send it unchanged, so it is metadata
//!   only.
//! - Body: a thin ping, `{"base":{"id":…},"webhook":{"id":…},"timestamp":…}`;
//!   the changes themselves are fetched from Airtable's payloads API.
//! - Event id: **Airtable sends none.** The id is composed of the signed
//!   `"{webhook.id}:{timestamp}"` — one ping of one webhook. A natural key,
//!   not a hash. Airtable documents that pings are at-least-once and may be
//!   spurious; a spurious ping is simply another event to deliver.
//! - Type: `notification` (pings have none). Object id: `base.id`. Created:
//!   `timestamp` (RFC 3339). No object version.
//! - Redelivery window: retries with back-off for about a day are reported;
//!   the overview followed here states none in writing, so 3 days are kept.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, VectorSource,
};

/// `hmac-sha256=` and the hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Airtable-Content-MAC", Algorithm::HmacSha256)
        .with_prefix("hmac-sha256=")
        .with_length(32);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Airtable",
    docs_url: "https://airtable.com/developers/web/api/webhooks-overview",
    scheme:
        "HMAC-SHA256, hex, `X-Airtable-Content-MAC: hmac-sha256=` (key: base64 `macSecretBase64`)",
    signed_parts: "raw body",
    id_source: "`{webhook.id}:{timestamp}` (signed)",
    handshake: None,
    batch: Some("a ping names no changes; they are fetched from Airtable's payloads API"),
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/saas_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Airtable;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Airtable))
}

impl Adapter for Airtable {
    fn name(&self) -> &'static str {
        "airtable"
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

    /// HMAC over the body, from which the id is composed; the type is fixed.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_base64(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let (Some(webhook), Some(timestamp)) = (
            envelope::string_at(&body, "/webhook/id"),
            envelope::string_at(&body, "/timestamp"),
        ) else {
            return Err(Refusal::missing_event_id(
                "no `webhook.id` and `timestamp` to name the ping",
            ));
        };
        let event = Envelope::with_id(format!("{webhook}:{timestamp}"))?
            .event_type(Some("notification".to_owned()))
            .object_id(envelope::string_at(&body, "/base/id"))
            .created_at(envelope::rfc3339_seconds(&timestamp));
        Ok(Outcome::Event(event))
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

/// Signs a body the way Airtable does and returns the header value
/// (`hmac-sha256=<hex>`), keyed with the decoded `macSecretBase64`. Used by
/// tests and load generators.
pub fn sign(mac_secret: &[u8], body: &[u8]) -> String {
    SIGNATURE.sign_hmac(mac_secret, &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};
    use base64::Engine;

    const SECRET: &[u8] = b"airtable-mac-secret-bytes";
    const BODY: &[u8] =
        br#"{"base":{"id":"appX"},"webhook":{"id":"achY"},"timestamp":"2023-11-14T22:13:20.000Z"}"#;

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        let encoded = base64::engine::general_purpose::STANDARD.encode(SECRET);
        let verifier = test_support::verifier(Box::new(Airtable), &encoded);
        let headers: Headers = [("X-Airtable-Content-MAC", header)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_ping_reads_the_composed_id() {
        let verified = verify(&sign(SECRET, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "achY:2023-11-14T22:13:20.000Z");
        assert_eq!(event.object_id.as_deref(), Some("appX"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let mut tampered = BODY.to_vec();
        tampered[12] ^= 1;
        assert_eq!(
            verify(&sign(SECRET, BODY), &tampered).unwrap_err(),
            Reason::Signature
        );
        // Keyed with the base64 text instead of its bytes: not Airtable's MAC.
        let encoded = base64::engine::general_purpose::STANDARD.encode(SECRET);
        assert_eq!(
            verify(&sign(encoded.as_bytes(), BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        let good = sign(SECRET, BODY);
        assert_eq!(
            verify(&good["hmac-sha256=".len()..], BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        let no_webhook = br#"{"base":{"id":"appX"},"timestamp":"2023-11-14T22:13:20.000Z"}"#;
        assert_eq!(
            verify(&sign(SECRET, no_webhook), no_webhook).unwrap_err(),
            Reason::MissingEventId
        );
    }
}
