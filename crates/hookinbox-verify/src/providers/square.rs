//! `square` — Square webhook signatures (`x-square-hmacsha256-signature`).
//!
//! Follows Square's "Validate notifications" guide (developer.squareup.com/
//! docs/webhooks) and its SDKs' `WebhooksHelper.isValidWebhookEventSignature`
//! (HMAC-SHA256 over notification URL + body, base64).
//!
//! - Header: `x-square-hmacsha256-signature` = standard base64 of the MAC.
//!   The legacy HMAC-SHA1 `x-square-signature` is not accepted.
//! - Signed bytes: the subscription's notification URL exactly as configured
//!   in Square (`public_url`, required) immediately followed by the raw body.
//!   HMAC-SHA256 keyed with the subscription's signature key as UTF-8 bytes.
//!   The URL comes from configuration, never from the request: a request
//!   cannot choose what it is checked against.
//! - Tolerance: none. Square signs no timestamp.
//! - Event id: body `event_id`, which Square documents as the idempotency
//!   value to de-duplicate on: a redelivered notification repeats it.
//! - Type: `type`. Object id: `data.id`. Created: `created_at` (RFC 3339).
//!   Square's object versions are not uniform across types, so none is claimed.
//! - Redelivery window: unsuccessful deliveries are retried for up to 72 hours.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

/// Standard base64 of the HMAC-SHA256 of notification URL + body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("x-square-hmacsha256-signature", Algorithm::HmacSha256);

#[derive(Debug)]
pub struct Square {
    /// The notification URL configured in Square; it is part of the signed bytes.
    notification_url: String,
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    let url = settings
        .public_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .ok_or(SettingsError::Missing {
            provider: "square",
            field: "public_url",
        })?;
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(SettingsError::Invalid {
            field: "public_url",
            message: "expected the absolute notification URL configured in Square".into(),
        });
    }
    Ok(Box::new(Square {
        notification_url: url.to_owned(),
    }))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Square",
    docs_url: "https://developer.squareup.com/docs/webhooks/step3validate",
    scheme: "HMAC-SHA256, base64, `x-square-hmacsha256-signature`",
    signed_parts: "`{public_url}{body}`",
    id_source: "body `event_id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("squareup (PyPI), verify only"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Square {
    fn name(&self) -> &'static str {
        "square"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        72 * 3600
    }

    /// HMAC over the URL and the body, which holds the id and the type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new()
                .owned(self.notification_url.as_bytes())
                .borrowed(request.body),
            candidates: vec![SIGNATURE.candidate(request.headers)?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let event = envelope::required_id_at(&body, "/event_id")?
            .event_type(envelope::string_at(&body, "/type"))
            .object_id(envelope::string_at(&body, "/data/id"))
            .created_at(envelope::rfc3339_at(&body, "/created_at"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let signature =
            SIGNATURE.sign_hmac(secret, &[self.notification_url.as_bytes(), outgoing.body]);
        Ok(crate::signer::SignedRequest::json(outgoing.body).header(SIGNATURE.name, signature))
    }
}

/// Signs a body the way Square does: base64 HMAC-SHA256 of notification URL
/// + body. Used by tests and load generators.
pub fn sign(signature_key: &str, notification_url: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(
        signature_key.as_bytes(),
        &[notification_url.as_bytes(), body],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const KEY: &str = "sq-signature-key";
    const URL: &str = "https://hooks.example.com/hooks/square";
    const BODY: &[u8] = br#"{"merchant_id":"M1","type":"payment.updated","event_id":"evt-1","created_at":"2023-11-14T22:13:20Z","data":{"type":"payment","id":"pay-1"}}"#;

    fn adapter(url: &str) -> Box<dyn Adapter> {
        build(&AdapterSettings {
            public_url: Some(url.into()),
            ..AdapterSettings::default()
        })
        .unwrap()
    }

    fn verify_headers(url: &str, headers: &Headers, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(adapter(url), KEY);
        test_support::verify(&verifier, headers, body, 0)
    }

    fn verify(url: &str, signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let headers: Headers = [("x-square-hmacsha256-signature", signature)]
            .into_iter()
            .collect();
        verify_headers(url, &headers, body)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(URL, &sign(KEY, URL, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "evt-1");
        assert_eq!(event.event_type.as_deref(), Some("payment.updated"));
        assert_eq!(event.object_id.as_deref(), Some("pay-1"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn refusals() {
        let good = sign(KEY, URL, BODY);
        let mut tampered = BODY.to_vec();
        tampered[5] ^= 1;
        assert_eq!(
            verify(URL, &good, &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&format!("{URL}2"), &good, BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(URL, &sign("other", URL, BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(URL, "***", BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify_headers(URL, &Headers::new(), BODY).unwrap_err(),
            Reason::MissingSignature
        );
        let body = br#"{"type":"payment.updated"}"#;
        assert_eq!(
            verify(URL, &sign(KEY, URL, body), body).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(URL, &sign(KEY, URL, b"nope"), b"nope").unwrap_err(),
            Reason::MalformedBody
        );
    }

    #[test]
    fn notification_url_is_required() {
        assert_eq!(
            build(&AdapterSettings::default()).unwrap_err(),
            SettingsError::Missing {
                provider: "square",
                field: "public_url"
            }
        );
        assert!(matches!(
            build(&AdapterSettings {
                public_url: Some("hooks.example.com/square".into()),
                ..AdapterSettings::default()
            })
            .unwrap_err(),
            SettingsError::Invalid { .. }
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in proptest::collection::vec(any::<u8>(), 1..256),
            secret in "[A-Za-z0-9_-]{1,40}",
            path in "[a-z0-9/]{0,16}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let url = format!("https://hooks.example.com/{path}");
            let signature = sign(&secret, &url, &body);
            let signed = Signed::in_header(adapter(&url), &secret, SIGNATURE, &signature, &[]);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;

            // The URL is signed too: the same request checked against another URL fails.
            let other_url = Signed { adapter: adapter(&format!("{url}x")), ..signed };
            prop_assert_eq!(other_url.verifies(&other_url.signature, &body), Ok(false));
        }
    }
}
