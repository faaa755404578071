//! `pagerduty` — PagerDuty V3 webhooks (`X-PagerDuty-Signature`).
//!
//! Follows PagerDuty's "Verifying Signatures" and "Webhook Behavior" pages
//! (developer.pagerduty.com/docs/webhooks-overview) and the official Go
//! client's `webhookv3.VerifySignature`.
//!
//! - Header: `X-PagerDuty-Signature: v1=<hex>[,v1=<hex>…]`, the hex
//!   HMAC-SHA256 of the raw body under each secret the subscription holds:
//!   several `v1` items while a secret rotates, one of which must match.
//!   Items of other versions are ignored.
//! - Secret: the subscription's signing secret as PagerDuty shows it once at
//!   creation, used as its UTF-8 bytes.
//! - Tolerance: none. PagerDuty signs no timestamp.
//! - Event id: body `event.id`, the event's id, the same on every retry of
//!   the delivery. Signed. Type: `event.event_type` (`incident.triggered`,
//!   `pagey.ping` for the test ping). Object id: `event.data.id` (the
//!   incident, service, …). Created: `event.occurred_at`. No object version.
//! - Batch: none; one event per request.
//! - Redelivery window: PagerDuty retries a failed delivery with backoff and
//!   publishes no total span; one day is kept, an assumption to revisit.

use crate::envelope::JsonFields;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureList, SignedMessage, VectorSource,
};

/// `v1=<hex>` items, comma-separated; PagerDuty sends no timestamp item.
const SIGNATURES: SignatureList<'static> = SignatureList {
    name: "X-PagerDuty-Signature",
    separator: ',',
    timestamp_key: "t",
    signature_key: "v1",
    algorithm: Algorithm::HmacSha256,
};

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "PagerDuty",
    docs_url: "https://developer.pagerduty.com/docs/webhooks-overview",
    scheme: "HMAC-SHA256, hex, `X-PagerDuty-Signature: v1=…[,v1=…]`",
    signed_parts: "raw body",
    id_source: "body `event.id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/ops_commerce_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

const ID: &str = "/event/id";
const TYPE: &str = "/event/event_type";
const OBJECT: &str = "/event/data/id";
const OCCURRED: &str = "/event/occurred_at";

#[derive(Debug, Default)]
pub struct PagerDuty;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(PagerDuty))
}

impl Adapter for PagerDuty {
    fn name(&self) -> &'static str {
        "pagerduty"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// HMAC over the body, from which the id and the type are read.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let listed = SIGNATURES.read(request.headers)?;
        if listed.candidates.is_empty() {
            return Err(Refusal::missing_signature(
                "no `v1` signature in X-PagerDuty-Signature",
            ));
        }
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new().borrowed(request.body),
            candidates: listed.candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let fields = JsonFields::read(request.body, &[ID, TYPE, OBJECT, OCCURRED])?;
        let event = fields
            .required_id_at(ID)?
            .event_type(fields.string_at(TYPE))
            .object_id(fields.string_at(OBJECT))
            .created_at(fields.rfc3339_at(OCCURRED));
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
            .header(SIGNATURES.name, sign(&[&secret], outgoing.body)))
    }
}

/// The `X-PagerDuty-Signature` value PagerDuty sends for `body` under each
/// of `secrets` (one `v1` item per secret). For tests and examples.
pub fn sign(secrets: &[&str], body: &[u8]) -> String {
    secrets
        .iter()
        .map(|secret| {
            let mac = crate::signature::hmac_sha256(secret.as_bytes(), &[body]);
            format!("v1={}", hex::encode(mac))
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "pagerduty-subscription-secret";
    const BODY: &[u8] = br#"{"event":{"id":"01DEN4HPBQAAAG05V5QQYBRZMF","event_type":"incident.triggered","resource_type":"incident","occurred_at":"2023-11-14T22:13:20.107Z","agent":{"html_url":"https://acme.pagerduty.com/users/PLH1HKV","id":"PLH1HKV","type":"user_reference"},"client":null,"data":{"id":"PGR0VU2","type":"incident","title":"A little bump in the road","status":"triggered"}}}"#;

    fn verify(signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let headers: Headers = [("X-PagerDuty-Signature", signature)].into_iter().collect();
        let verifier = test_support::verifier(Box::new(PagerDuty), SECRET);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(&[SECRET], BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "01DEN4HPBQAAAG05V5QQYBRZMF");
        assert_eq!(event.event_type.as_deref(), Some("incident.triggered"));
        assert_eq!(event.object_id.as_deref(), Some("PGR0VU2"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        assert!(verified.unsigned_metadata().is_empty());
    }

    #[test]
    fn one_matching_signature_of_several_is_enough() {
        let rotating = sign(&["the-new-secret", SECRET], BODY);
        assert!(verify(&rotating, BODY).is_ok());
        assert!(verify(&format!("v0=abcd,{}", sign(&[SECRET], BODY)), BODY).is_ok());
    }

    #[test]
    fn refusals() {
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify(&sign(&[SECRET], BODY), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&sign(&["other"], BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify("v0=abcd", BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify("v1=zz", BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_id = br#"{"event":{"event_type":"incident.triggered"}}"#;
        assert_eq!(
            verify(&sign(&[SECRET], no_id), no_id).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(&sign(&[SECRET], b"not json"), b"not json").unwrap_err(),
            Reason::MalformedBody
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            title in any::<String>(),
            secret in "[A-Za-z0-9_+/=]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "event": {"id": "01DEN4", "event_type": "incident.triggered", "data": {"title": title}}
            }))
            .unwrap();
            let header = crate::SignatureHeader::hex("X-PagerDuty-Signature", Algorithm::HmacSha256)
                .with_prefix("v1=");
            let signed = Signed::in_header(Box::new(PagerDuty), &secret, header, &sign(&[&secret], &body), &[]);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
