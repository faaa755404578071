//! `box` — Box webhooks (V2) signed with the application's primary and
//! secondary signature keys.
//!
//! Follows Box's "Signature verification" guide (developer.box.com/guides/
//! webhooks/v2/signatures-v2) and `WebhooksManager.validate_message` of the
//! official Python SDK (`boxsdk` on PyPI, module `box_sdk_gen`).
//!
//! - Headers: `BOX-SIGNATURE-PRIMARY` and `BOX-SIGNATURE-SECONDARY`, each the
//!   standard base64 of an HMAC-SHA256; `BOX-DELIVERY-TIMESTAMP` (RFC 3339);
//!   `BOX-SIGNATURE-VERSION: 1` and `BOX-SIGNATURE-ALGORITHM: HmacSHA256`,
//!   which the SDK requires and so does this adapter (another version or
//!   algorithm is `malformed_signature`).
//! - Keys: Box keeps two signature keys per application so one can be rolled
//!   while the other signs. Configure both as secret versions of the endpoint
//!   (e.g. `primary` and `secondary`); either header may match either key,
//!   and the matched version is recorded. A request needs at least one of the
//!   two signature headers.
//! - Signed bytes: the raw body immediately followed by the
//!   `BOX-DELIVERY-TIMESTAMP` header exactly as sent, HMAC-SHA256 keyed with
//!   the key string as UTF-8 bytes. (The SDK also retries over a body with
//!   non-ASCII characters `\u`-escaped, a workaround for frameworks that
//!   re-encode the body; hookinbox verifies the raw bytes only.)
//! - Tolerance: 600 s (Box: reject messages older than ten minutes). The SDK
//!   also refuses any timestamp in the future; hookinbox, like its other
//!   schemes, applies the same window in both directions. A timestamp that is
//!   not RFC 3339 is `timestamp`.
//! - Event id: body `id`, the webhook event's id (signed). `BOX-DELIVERY-ID`
//!   names one delivery attempt, not the event, and is not used.
//! - Type: `trigger` (`FILE.UPLOADED`). Object id: `source.id`. Created:
//!   `created_at` (RFC 3339). Box gives no object version.
//! - Redelivery window: the guide followed here states no retry span; 24
//!   hours are kept, an assumption to revisit when Box documents one.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, SignedMessage, VectorSource,
};

/// The signature under the primary key.
const PRIMARY: SignatureHeader<'static> =
    SignatureHeader::base64("BOX-SIGNATURE-PRIMARY", Algorithm::HmacSha256).with_length(32);
/// The signature under the secondary key.
const SECONDARY: SignatureHeader<'static> =
    SignatureHeader::base64("BOX-SIGNATURE-SECONDARY", Algorithm::HmacSha256).with_length(32);
const TIMESTAMP: &str = "BOX-DELIVERY-TIMESTAMP";
const VERSION: &str = "BOX-SIGNATURE-VERSION";
const ALGORITHM: &str = "BOX-SIGNATURE-ALGORITHM";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Box",
    docs_url: "https://developer.box.com/guides/webhooks/v2/signatures-v2/",
    scheme: "HMAC-SHA256, base64, `BOX-SIGNATURE-PRIMARY` / `BOX-SIGNATURE-SECONDARY` (two keys)",
    signed_parts: "`{body}{BOX-DELIVERY-TIMESTAMP}`",
    id_source: "body `id` (signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("boxsdk (PyPI)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct BoxCom;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(BoxCom))
}

impl Adapter for BoxCom {
    fn name(&self) -> &'static str {
        "box"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(600)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// HMAC over the body (which holds the id and the trigger) and the timestamp.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let headers = request.headers;
        let primary = headers.get_nonempty(PRIMARY.name);
        let secondary = headers.get_nonempty(SECONDARY.name);
        if primary.is_none() && secondary.is_none() {
            return Err(Refusal::missing_signature(
                "neither BOX-SIGNATURE-PRIMARY nor BOX-SIGNATURE-SECONDARY",
            ));
        }
        let timestamp = required(headers, TIMESTAMP)?;
        for (name, expected) in [(VERSION, "1"), (ALGORITHM, "HmacSHA256")] {
            if headers.get_nonempty(name) != Some(expected) {
                return Err(Refusal::malformed_signature(format!(
                    "{name} is not `{expected}`"
                )));
            }
        }
        let seconds = envelope::rfc3339_seconds(timestamp)
            .ok_or_else(|| Refusal::timestamp("BOX-DELIVERY-TIMESTAMP is not RFC 3339"))?;
        let mut candidates = Vec::with_capacity(2);
        for (header, value) in [(PRIMARY, primary), (SECONDARY, secondary)] {
            if let Some(value) = value {
                candidates.push(header.decode(value)?);
            }
        }
        Ok(SignatureClaim {
            timestamp: Some(seconds),
            message: SignedMessage::new()
                .borrowed(request.body)
                .owned(timestamp.as_bytes()),
            candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let event = envelope::required_id_at(&body, "/id")?
            .event_type(envelope::string_at(&body, "/trigger"))
            .object_id(envelope::string_at(&body, "/source/id"))
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
        let timestamp = format!("{}Z", crate::signer::utc_date_time(outgoing.now)?);
        let signature = PRIMARY.sign_hmac(secret, &[outgoing.body, timestamp.as_bytes()]);
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header("BOX-DELIVERY-ID", outgoing.event_id)
            .header(TIMESTAMP, timestamp)
            .header(VERSION, "1")
            .header(ALGORITHM, "HmacSHA256")
            .header(PRIMARY.name, signature))
    }
}

/// Signs a body the way Box does for one key: base64 HMAC-SHA256 of the body
/// followed by the delivery timestamp. For tests and load generators.
pub fn sign(key: &str, timestamp: &str, body: &[u8]) -> String {
    PRIMARY.sign_hmac(key.as_bytes(), &[body, timestamp.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const PRIMARY_KEY: &str = "box-primary-key";
    const SECONDARY_KEY: &str = "box-secondary-key";
    const NOW: i64 = 1_700_000_000;
    const AT: &str = "2023-11-14T22:13:20Z";
    const BODY: &[u8] = br#"{"type":"webhook_event","id":"evt-1","created_at":"2023-11-14T14:13:10-08:00","trigger":"FILE.UPLOADED","source":{"id":"f-1","type":"file"}}"#;

    fn headers(primary: Option<&str>, secondary: Option<&str>, at: &str) -> Headers {
        let mut h = Headers::new();
        if let Some(value) = primary {
            h.append("BOX-SIGNATURE-PRIMARY", value);
        }
        if let Some(value) = secondary {
            h.append("BOX-SIGNATURE-SECONDARY", value);
        }
        h.append("BOX-DELIVERY-TIMESTAMP", at);
        h.append("BOX-SIGNATURE-VERSION", "1");
        h.append("BOX-SIGNATURE-ALGORITHM", "HmacSHA256");
        h
    }

    fn verify(h: &Headers, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier_with(
            Box::new(BoxCom),
            &[("primary", PRIMARY_KEY), ("secondary", SECONDARY_KEY)],
        );
        test_support::verify(&verifier, h, body, NOW)
    }

    #[test]
    fn either_key_verifies_and_the_envelope_is_read() {
        let both = headers(
            Some(&sign(PRIMARY_KEY, AT, BODY)),
            Some(&sign(SECONDARY_KEY, AT, BODY)),
            AT,
        );
        let verified = verify(&both, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "evt-1");
        assert_eq!(event.event_type.as_deref(), Some("FILE.UPLOADED"));
        assert_eq!(event.object_id.as_deref(), Some("f-1"));
        assert_eq!(event.created_at, Some(1_699_999_990));
        let secondary_only = headers(None, Some(&sign(SECONDARY_KEY, AT, BODY)), AT);
        assert!(verify(&secondary_only, BODY).is_ok());
    }

    #[test]
    fn refusals() {
        let good = sign(PRIMARY_KEY, AT, BODY);
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify(&headers(Some(&good), None, AT), &tampered).unwrap_err(),
            Reason::Signature
        );
        // The timestamp is signed: the same signature under another one fails.
        let later = "2023-11-14T22:13:21Z";
        assert_eq!(
            verify(&headers(Some(&good), None, later), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&headers(None, None, AT), BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(&headers(Some("%%"), None, AT), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let mut v2 = headers(Some(&good), None, AT);
        v2 = v2
            .iter()
            .map(|(n, v)| {
                (
                    n,
                    if n.eq_ignore_ascii_case(VERSION) {
                        "2"
                    } else {
                        v
                    },
                )
            })
            .collect();
        assert_eq!(verify(&v2, BODY).unwrap_err(), Reason::MalformedSignature);
        let at = "yesterday";
        assert_eq!(
            verify(&headers(Some(&sign(PRIMARY_KEY, at, BODY)), None, at), BODY).unwrap_err(),
            Reason::Timestamp
        );
    }

    #[test]
    fn ten_minute_window_both_directions() {
        test_support::assert_window(NOW, 600, |seconds| {
            // Seconds of 2023-11-14 (UTC) written as RFC 3339.
            let of_day = seconds - NOW + 22 * 3600 + 13 * 60 + 20;
            let at = format!(
                "2023-11-14T{:02}:{:02}:{:02}Z",
                of_day / 3600,
                of_day / 60 % 60,
                of_day % 60
            );
            verify(
                &headers(Some(&sign(PRIMARY_KEY, &at, BODY)), None, &at),
                BODY,
            )
        });
    }
}
