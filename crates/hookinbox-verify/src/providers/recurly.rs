//! `recurly` — Recurly webhook signatures (`recurly-signature`).
//!
//! Follows Recurly's "Signature verification" page
//! (docs.recurly.com/docs/signature-verification) and the official client
//! libraries' `Webhooks.verify_signature` (recurly-client-ruby
//! `lib/recurly/webhooks.rb`, recurly-client-go `VerifyWebhookSignature`).
//! Only JSON webhooks are signed; XML webhooks are not accepted here.
//!
//! - Header: `recurly-signature: <unix milliseconds>,<hex>[,<hex>…]` — the
//!   first item is the timestamp, every other item a signature. While a
//!   secret is regenerated the old and the new key are both valid for 24
//!   hours and the header carries one signature per key; any may match.
//! - Signed bytes: `"{timestamp}.{raw body}"`, the timestamp as sent.
//!   HMAC-SHA256 keyed with the webhook endpoint's secret key as UTF-8
//!   bytes.
//! - Tolerance: 300 s in both directions, the libraries' `DEFAULT_TOLERANCE`
//!   (5 minutes, in milliseconds there; floored to seconds here).
//! - Event id: body `id` (signed), the notification's id. Type:
//!   `"{object_type}.{event_type}"` (`subscription.renewed`). Object id:
//!   `uuid` when present. Created: `event_time` (RFC 3339). No object
//!   version.
//! - Redelivery window: a failed notification is retried up to 10 times,
//!   the x-th retry (from 0) about `10 + x * 2^(x + 5)` seconds after the
//!   previous attempt (Recurly's "Automatic retries" page): about 73 hours
//!   in all. Four days are kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    encoding, Adapter, Algorithm, Candidate, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignedMessage,
};

/// The header holding the timestamp and the signatures.
const HEADER: &str = "recurly-signature";

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Recurly",
    docs_url: "https://docs.recurly.com/docs/signature-verification",
    scheme: "HMAC-SHA256, hex, `recurly-signature: {ms},{sig}[,{sig}…]`",
    signed_parts: "`{timestamp}.{body}` (milliseconds)",
    id_source: "body `id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Recurly;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Recurly))
}

impl Adapter for Recurly {
    fn name(&self) -> &'static str {
        "recurly"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        4 * 24 * 3600
    }

    /// HMAC over the timestamp and the body, which holds the id and type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let header = required(request.headers, HEADER)?;
        let mut items = header.split(',').map(str::trim);
        let timestamp = items.next().unwrap_or_default();
        let seconds = encoding::unix_millis_as_seconds(timestamp, HEADER)?;
        let candidates: Vec<Candidate> = items
            .filter_map(encoding::hex_signature)
            .map(|bytes| Candidate::new(Algorithm::HmacSha256, bytes))
            .collect();
        if candidates.is_empty() {
            return Err(Refusal::malformed_signature(
                "recurly-signature has no hex signature after the timestamp",
            ));
        }
        Ok(SignatureClaim {
            timestamp: Some(seconds),
            message: SignedMessage::new()
                .owned(format!("{timestamp}."))
                .borrowed(request.body),
            candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let id = envelope::string_at(&body, "/id")
            .ok_or_else(|| Refusal::missing_event_id("no event id at `/id` in the body"))?;
        let event_type = match (
            envelope::string_at(&body, "/object_type"),
            envelope::string_at(&body, "/event_type"),
        ) {
            (Some(object), Some(action)) => Some(format!("{object}.{action}")),
            (_, action) => action,
        };
        let event = Envelope::with_id(id)?
            .event_type(event_type)
            .object_id(envelope::string_at(&body, "/uuid"))
            .created_at(envelope::rfc3339_at(&body, "/event_time"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = String::from_utf8_lossy(crate::signer::shared_secret(&key)?).into_owned();
        let timestamp = (outgoing.now * 1000).to_string();
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(HEADER, sign(&[&secret], &timestamp, outgoing.body)))
    }
}

/// The header a sender writes: the timestamp (milliseconds, as text), then
/// the hex HMAC under each secret. Used by tests and load generators.
pub fn sign(secrets: &[&str], timestamp: &str, body: &[u8]) -> String {
    let mut header = timestamp.to_owned();
    for secret in secrets {
        let mac = crate::signature::hmac_sha256(
            secret.as_bytes(),
            &[format!("{timestamp}.").as_bytes(), body],
        );
        header.push(',');
        header.push_str(&hex::encode(mac));
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "recurly-endpoint-key";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"id":"t7ki5ljzjn9b","object_type":"subscription","site_id":"site1","event_type":"renewed","event_time":"2023-11-14T22:13:20Z","uuid":"5ecb1bf4f1c8d7c0"}"#;

    fn verify(header: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Recurly), SECRET);
        let headers: Headers = header.map(|h| (HEADER, h)).into_iter().collect();
        test_support::verify(&verifier, &headers, body, NOW)
    }

    fn millis(seconds: i64) -> String {
        (seconds * 1000).to_string()
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(&sign(&[SECRET], &millis(NOW - 5), BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "t7ki5ljzjn9b");
        assert_eq!(event.event_type.as_deref(), Some("subscription.renewed"));
        assert_eq!(event.object_id.as_deref(), Some("5ecb1bf4f1c8d7c0"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn either_key_of_a_regenerated_secret_matches() {
        let header = sign(&["the-new-key", SECRET], &millis(NOW), BODY);
        assert!(verify(Some(&header), BODY).is_ok());
    }

    #[test]
    fn tolerance_window_both_directions() {
        test_support::assert_window(NOW, 300, |at| {
            verify(Some(&sign(&[SECRET], &millis(at), BODY)), BODY)
        });
    }

    #[test]
    fn refusals() {
        let good = sign(&[SECRET], &millis(NOW), BODY);
        let mut tampered = BODY.to_vec();
        tampered[10] ^= 1;
        assert_eq!(
            verify(Some(&good), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(Some(&sign(&["other"], &millis(NOW), BODY)), BODY).unwrap_err(),
            Reason::Signature
        );
        let other_time = good.replacen(&millis(NOW), &millis(NOW - 1), 1);
        assert_eq!(
            verify(Some(&other_time), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(Some(&millis(NOW)), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify(Some(&format!("{},zz", millis(NOW))), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify(Some("soon,00"), BODY).unwrap_err(),
            Reason::Timestamp
        );
        let no_id = br#"{"object_type":"account"}"#;
        assert_eq!(
            verify(Some(&sign(&[SECRET], &millis(NOW), no_id)), no_id).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn single_byte_changes_of_body_or_signature_are_refused(
            body in prop::collection::vec(any::<u8>(), 1..256),
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let header = sign(&[SECRET], &millis(NOW), &body);
            prop_assert!(verify(Some(&header), &body).map(|_| ()) != Err(Reason::Signature));
            let mut changed = body.clone();
            changed[at.index(body.len())] ^= flip;
            prop_assert!(verify(Some(&header), &changed).is_err());
            let (timestamp, signature) = header.split_once(',').unwrap();
            let mut bytes = hex::decode(signature).unwrap();
            let i = at.index(bytes.len());
            bytes[i] ^= flip;
            let changed_header = format!("{timestamp},{}", hex::encode(bytes));
            prop_assert_eq!(verify(Some(&changed_header), &body).unwrap_err(), Reason::Signature);
        }
    }
}
