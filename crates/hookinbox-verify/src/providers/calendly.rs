//! `calendly` — Calendly webhook signatures (`Calendly-Webhook-Signature`).
//!
//! Follows Calendly's "Webhook signatures" guide
//! (developer.calendly.com/api-docs/4c305798a61d3-webhook-signatures): a
//! webhook subscription created with a `signing_key` is signed like
//! Stripe's, HMAC-SHA256 over the timestamp, a dot and the body.
//!
//! - Header: `Calendly-Webhook-Signature: t=<unix seconds>,v1=<hex>`.
//! - Signed bytes: `"{t}.{raw body}"`. HMAC-SHA256 keyed with the
//!   subscription's signing key as UTF-8 bytes.
//! - Tolerance: 180 s in both directions (the guide's three minutes).
//! - Event id: Calendly sends none. The id is composed of signed body
//!   fields a retry repeats: `"{event}:{payload.uri}"` — the event name and
//!   the URI of the invitee (or routing form submission) it reports — so
//!   `invitee.created` and a later `invitee.canceled` of one invitee are two
//!   events, and a retry of either is the same. Missing either part:
//!   `missing_event_id`.
//! - Type: `event` (`invitee.created`). Object id: `payload.uri`. Created:
//!   `created_at` (RFC 3339). No object version.
//! - Redelivery window: failed deliveries are retried with backoff for up
//!   to 24 hours. One day is kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureList, SignedMessage,
};

/// `t=<seconds>,v1=<hex>`.
const SIGNATURE: SignatureList<'static> = SignatureList {
    name: "Calendly-Webhook-Signature",
    separator: ',',
    timestamp_key: "t",
    signature_key: "v1",
    algorithm: Algorithm::HmacSha256,
};

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Calendly",
    docs_url: "https://developer.calendly.com/api-docs/4c305798a61d3-webhook-signatures",
    scheme: "HMAC-SHA256, hex, `Calendly-Webhook-Signature: t=…,v1=…`",
    signed_parts: "`{t}.{body}`",
    id_source: "`{event}:{payload.uri}` (signed body fields)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Calendly;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Calendly))
}

impl Adapter for Calendly {
    fn name(&self) -> &'static str {
        "calendly"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(180)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// HMAC over `t` and the body, from which the id and type come.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let listed = SIGNATURE.read(request.headers)?;
        let [timestamp] = listed.timestamps[..] else {
            return Err(Refusal::malformed_signature(
                "Calendly-Webhook-Signature needs exactly one `t`",
            ));
        };
        if listed.candidates.is_empty() {
            return Err(Refusal::malformed_signature(
                "Calendly-Webhook-Signature has no `v1`",
            ));
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
        let name = envelope::string_at(&body, "/event");
        let uri = envelope::string_at(&body, "/payload/uri");
        let (Some(name), Some(uri)) = (name, uri) else {
            return Err(Refusal::missing_event_id(
                "the body needs `event` and `payload.uri` to name the event",
            ));
        };
        let event = Envelope::with_id(format!("{name}:{uri}"))?
            .event_type(Some(name))
            .object_id(Some(uri))
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
        Ok(crate::signer::SignedRequest::json(outgoing.body).header(
            "Calendly-Webhook-Signature",
            sign(&secret, outgoing.now, outgoing.body),
        ))
    }
}

/// The header a sender writes for `body` at `timestamp`. Used by tests and
/// load generators.
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
    use proptest::prelude::*;

    const SECRET: &str = "calendly-signing-key";
    const NOW: i64 = 1_700_000_000;
    const URI: &str =
        "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA";
    const BODY: &[u8] = br#"{"created_at":"2023-11-14T22:13:20.000000Z","created_by":"https://api.calendly.com/users/AAAA","event":"invitee.created","payload":{"uri":"https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA","name":"John Doe"}}"#;

    fn verify(header: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Calendly), SECRET);
        let headers: Headers = header
            .map(|h| ("Calendly-Webhook-Signature", h))
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, NOW)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(&sign(SECRET, NOW - 5, BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, format!("invitee.created:{URI}"));
        assert_eq!(event.event_type.as_deref(), Some("invitee.created"));
        assert_eq!(event.object_id.as_deref(), Some(URI));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn tolerance_window_both_directions() {
        test_support::assert_window(NOW, 180, |at| verify(Some(&sign(SECRET, at, BODY)), BODY));
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, NOW, BODY);
        let mut tampered = BODY.to_vec();
        tampered[40] ^= 1;
        assert_eq!(
            verify(Some(&good), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(Some(&sign("other", NOW, BODY)), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        for malformed in [
            "t=1700000000",
            "v1=00",
            "t=1,t=2,v1=00",
            "t=x,v1=00",
            "t=1700000000,v1=zz",
        ] {
            assert_eq!(
                verify(Some(malformed), BODY).unwrap_err(),
                Reason::MalformedSignature,
                "{malformed}"
            );
        }
        let no_uri = br#"{"event":"invitee.created","payload":{}}"#;
        assert_eq!(
            verify(Some(&sign(SECRET, NOW, no_uri)), no_uri).unwrap_err(),
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
            let header = sign(SECRET, NOW, &body);
            prop_assert!(verify(Some(&header), &body).map(|_| ()) != Err(Reason::Signature));
            let mut changed = body.clone();
            changed[at.index(body.len())] ^= flip;
            prop_assert!(verify(Some(&header), &changed).is_err());
            let (timestamp, signature) = header.split_once(",v1=").unwrap();
            let mut bytes = hex::decode(signature).unwrap();
            let i = at.index(bytes.len());
            bytes[i] ^= flip;
            let changed_header = format!("{timestamp},v1={}", hex::encode(bytes));
            prop_assert_eq!(verify(Some(&changed_header), &body).unwrap_err(), Reason::Signature);
        }
    }
}
