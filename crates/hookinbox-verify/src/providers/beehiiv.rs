//! `beehiiv` — beehiiv webhooks: Standard Webhooks, a named preset of
//! `standard` (see `providers/standard.rs` for the scheme itself), plus
//! beehiiv's own name for the event type.
//!
//! Follows https://developers.beehiiv.com/docs/v2/webhooks (webhook signing
//! secrets and verification).
//!
//! - Headers: `webhook-id`, `webhook-timestamp`, `webhook-signature`, or the
//!   `svix-` names of the same headers (beehiiv's deliveries are Standard
//!   Webhooks, which the `standardwebhooks` and `svix` libraries read alike):
//!   the `webhook-` family when its signature header is present.
//! - Signed bytes: `"{id}.{timestamp}.{raw body}"`, HMAC-SHA256, each
//!   `v1,<base64>` entry of the signature header a candidate.
//! - Secret: the `whsec_…` signing secret of the webhook in beehiiv's
//!   settings (base64 after `whsec_`).
//! - Tolerance: 300 s in both directions (the spec's and the SDKs' default).
//! - Event id: the id header, signed and kept on every retry. Type: body
//!   `event_type` (`post.sent`, `subscription.confirmed`) — beehiiv's name
//!   for it — else `type`, as `standard`. Created: body `timestamp` when it
//!   is RFC 3339. Signed.
//! - Redelivery window: failed deliveries are retried with backoff and can be
//!   resent by hand with the same id; 3 days, as `standard`.

use crate::envelope::JsonFields;
use crate::providers::standard::{HeaderFamily, Preset, SecretFormat};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, VectorSource,
};

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "beehiiv",
    docs_url: "https://developers.beehiiv.com/docs/v2/webhooks",
    scheme: "Standard Webhooks: HMAC-SHA256 (`whsec_` base64 key), base64, `webhook-signature: v1,…` (or `svix-signature`)",
    signed_parts: "`{webhook-id}.{webhook-timestamp}.{body}`",
    id_source: "header `webhook-id` (or `svix-id`)",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk(
        "standardwebhooks (PyPI), the Standard Webhooks library beehiiv's scheme follows",
    ),
    signing: crate::Signing::Symmetric,
};

/// beehiiv's header family and secret format over the Standard Webhooks scheme.
pub const PRESET: Preset = Preset {
    name: "beehiiv",
    family: HeaderFamily::Either,
    secret: SecretFormat::Base64,
    redelivery_window_seconds: 3 * 24 * 3600,
    facts: &FACTS,
};

/// The preset, with the type read from beehiiv's `event_type`.
#[derive(Debug, Default)]
pub struct Beehiiv;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Beehiiv))
}

impl Adapter for Beehiiv {
    fn name(&self) -> &'static str {
        PRESET.name()
    }

    fn facts(&self) -> &'static ProviderFacts {
        PRESET.facts()
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        PRESET.default_tolerance_seconds()
    }

    fn redelivery_window_seconds(&self) -> u64 {
        PRESET.redelivery_window_seconds()
    }

    /// As `standard`: id and timestamp signed with the body, which holds the type.
    fn coverage(&self) -> SignatureCoverage {
        PRESET.coverage()
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        PRESET.parse_key(secret)
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        PRESET.claim(request)
    }

    fn envelope(&self, request: &Request<'_>, key: &Key) -> Result<Outcome, Refusal> {
        let outcome = PRESET.envelope(request, key)?;
        let Outcome::Event(event) = outcome else {
            return Ok(outcome);
        };
        let event_type = JsonFields::read(request.body, &["/event_type"])
            .ok()
            .and_then(|body| body.string_at("/event_type"));
        Ok(Outcome::Event(match event_type {
            Some(event_type) => event.event_type(Some(event_type)),
            None => event,
        }))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        PRESET.sign(outgoing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};
    use base64::Engine;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const NOW: i64 = 1_700_000_000;
    const ID: &str = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
    const BODY: &[u8] = br#"{"data":{"id":"post_00000000-0000-0000-0000-000000000000","title":"Weekly digest"},"event_type":"post.sent","uid":"c0d2e5f1-7b2a-4c7e-9a3f-6b1d2e3f4a5b"}"#;

    fn sign(prefix: &str, secret: &str, at: i64, body: &[u8]) -> Headers {
        let key = base64::engine::general_purpose::STANDARD
            .decode(secret.trim_start_matches("whsec_"))
            .unwrap();
        let mac = crate::signature::hmac_sha256(&key, &[format!("{ID}.{at}.").as_bytes(), body]);
        let signature = format!(
            "v1,{}",
            base64::engine::general_purpose::STANDARD.encode(mac)
        );
        [
            (format!("{prefix}-id"), ID.to_owned()),
            (format!("{prefix}-timestamp"), at.to_string()),
            (format!("{prefix}-signature"), signature),
        ]
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect()
    }

    fn verify(headers: &Headers, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Beehiiv), SECRET);
        test_support::verify(&verifier, headers, body, NOW)
    }

    #[test]
    fn valid_request_reads_beehiivs_event_type() {
        for prefix in ["webhook", "svix"] {
            let verified = verify(&sign(prefix, SECRET, NOW, BODY), BODY).unwrap();
            let event = verified.event().unwrap();
            assert_eq!(event.event_id, ID, "{prefix}");
            assert_eq!(event.event_type.as_deref(), Some("post.sent"), "{prefix}");
            assert!(verified.unsigned_metadata().is_empty());
        }
    }

    #[test]
    fn timestamp_window_edges_both_ways() {
        test_support::assert_window(NOW, 300, |at| {
            verify(&sign("webhook", SECRET, at, BODY), BODY)
        });
    }

    #[test]
    fn refusals() {
        let mut tampered = BODY.to_vec();
        tampered[20] ^= 1;
        assert_eq!(
            verify(&sign("webhook", SECRET, NOW, BODY), &tampered).unwrap_err(),
            Reason::Signature
        );
        let other = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        assert_eq!(
            verify(&sign("webhook", other, NOW, BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&Headers::new(), BODY).unwrap_err(),
            Reason::MissingSignature
        );
    }
}
