//! `persona` — Persona webhook signatures (`Persona-Signature`).
//!
//! Follows Persona's "Webhooks: Best Practices" page (docs.withpersona.com,
//! "Checking Signatures"); Persona publishes no server SDK that verifies.
//!
//! - Header: `Persona-Signature: t=<unix seconds>,v1=<hex>`. While a webhook
//!   secret rotates, Persona sends one `t=…,v1=…` pair per secret separated
//!   by a space; any `v1` may match. All pairs must carry the same `t`
//!   (anything else is `malformed_signature`): the signed timestamp is one.
//! - Signed bytes: `"{t}.{raw body}"`, HMAC-SHA256 keyed with the webhook
//!   secret (`wbhsec_…`) as UTF-8 bytes, hex.
//! - Tolerance: Persona documents `t` as the time the request was sent, so
//!   every attempt is signed anew, but no window; hookinbox applies 300 s in
//!   both directions, the window of the same scheme elsewhere (Stripe), so a
//!   captured request cannot be replayed later. An endpoint can change it
//!   with `tolerance`.
//! - Event id: body `data.id` (`evt_…`), the Event object's id, signed.
//!   Persona asks receivers to handle duplicate deliveries of one event
//!   idempotently; they carry the same event.
//! - Type: `data.attributes.name` (`inquiry.completed`). Object id:
//!   `data.attributes.payload.data.id`. Created: `data.attributes.created-at`
//!   (RFC 3339). No object version.
//! - Redelivery window: the pages followed here state no retry span; 3 days
//!   are kept, an assumption to revisit when Persona documents one.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    encoding, Adapter, Algorithm, Candidate, Key, KeyError, Outcome, ProviderFacts, Refusal,
    Request, SignatureClaim, SignatureCoverage, SignedMessage, VectorSource,
};

const SIGNATURE: &str = "Persona-Signature";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Persona",
    docs_url: "https://docs.withpersona.com/docs/best-practices",
    scheme:
        "HMAC-SHA256, hex, `Persona-Signature: t=…,v1=…` (space-separated pairs while rotating)",
    signed_parts: "`{t}.{body}`",
    id_source: "body `data.id` (signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/saas_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Persona;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Persona))
}

impl Adapter for Persona {
    fn name(&self) -> &'static str {
        "persona"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3 * 24 * 3600
    }

    /// HMAC over the timestamp and the body, which holds the id and the name.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let (timestamp, candidates) = parse(required(request.headers, SIGNATURE)?)?;
        Ok(SignatureClaim {
            timestamp: Some(
                timestamp
                    .parse()
                    .map_err(|_| Refusal::timestamp("Persona-Signature `t` is out of range"))?,
            ),
            message: SignedMessage::new()
                .owned(format!("{timestamp}."))
                .borrowed(request.body),
            candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let event = envelope::required_id_at(&body, "/data/id")?
            .event_type(envelope::string_at(&body, "/data/attributes/name"))
            .object_id(envelope::string_at(
                &body,
                "/data/attributes/payload/data/id",
            ))
            .created_at(envelope::rfc3339_at(&body, "/data/attributes/created-at"));
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
            .header(SIGNATURE, sign(&secret, outgoing.now, outgoing.body)))
    }
}

/// Reads `t=…,v1=…[ t=…,v1=…]`: the one timestamp text (integer seconds) and
/// every `v1` signature. Items of other keys are ignored.
fn parse(header: &str) -> Result<(&str, Vec<Candidate>), Refusal> {
    let mut timestamp: Option<&str> = None;
    let mut candidates = Vec::new();
    for item in header.split([',', ' ']).filter(|item| !item.is_empty()) {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| Refusal::malformed_signature("Persona-Signature item without `=`"))?;
        match key {
            "t" => {
                encoding::unix_seconds(value, "Persona-Signature `t`")?;
                match timestamp {
                    Some(seen) if seen != value => {
                        return Err(Refusal::malformed_signature(
                            "Persona-Signature pairs carry different `t` values",
                        ))
                    }
                    _ => timestamp = Some(value),
                }
            }
            "v1" => {
                let bytes = encoding::hex_signature(value).ok_or_else(|| {
                    Refusal::malformed_signature("Persona-Signature `v1` is not hex")
                })?;
                candidates.push(Candidate::new(Algorithm::HmacSha256, bytes));
            }
            _ => {}
        }
    }
    let timestamp =
        timestamp.ok_or_else(|| Refusal::malformed_signature("Persona-Signature has no `t`"))?;
    if candidates.is_empty() {
        return Err(Refusal::malformed_signature(
            "Persona-Signature has no `v1`",
        ));
    }
    Ok((timestamp, candidates))
}

/// Signs a body the way Persona does and returns the header value
/// `t={timestamp},v1=<hex>`. Used by tests and load generators.
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

    const SECRET: &str = "wbhsec_persona-test";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"data":{"type":"event","id":"evt_1","attributes":{"name":"inquiry.completed","created-at":"2023-11-14T22:13:20.000Z","payload":{"data":{"type":"inquiry","id":"inq_1"}}}}}"#;

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Persona), SECRET);
        let headers: Headers = [("Persona-Signature", header)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, NOW)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(&sign(SECRET, NOW, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "evt_1");
        assert_eq!(event.event_type.as_deref(), Some("inquiry.completed"));
        assert_eq!(event.object_id.as_deref(), Some("inq_1"));
        assert_eq!(event.created_at, Some(NOW));
    }

    #[test]
    fn during_rotation_any_pair_may_match() {
        let header = format!("{} {}", sign("old", NOW, BODY), sign(SECRET, NOW, BODY));
        assert!(verify(&header, BODY).is_ok());
        let mixed = format!("{} {}", sign("old", NOW - 1, BODY), sign(SECRET, NOW, BODY));
        assert_eq!(
            verify(&mixed, BODY).unwrap_err(),
            Reason::MalformedSignature
        );
    }

    #[test]
    fn window_both_directions() {
        test_support::assert_window(NOW, 300, |t| verify(&sign(SECRET, t, BODY), BODY));
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, NOW, BODY);
        let mut tampered = BODY.to_vec();
        tampered[25] ^= 1;
        assert_eq!(verify(&good, &tampered).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(&sign("other", NOW, BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        // The timestamp is signed: moving it breaks the signature.
        let moved = good.replace(&format!("t={NOW}"), &format!("t={}", NOW - 1));
        assert_eq!(verify(&moved, BODY).unwrap_err(), Reason::Signature);
        for bad in ["v1=00", "t=1", "t=1,v1=zz", "junk"] {
            assert_eq!(
                verify(bad, BODY).unwrap_err(),
                Reason::MalformedSignature,
                "{bad}"
            );
        }
        assert_eq!(verify("t=soon,v1=00", BODY).unwrap_err(), Reason::Timestamp);
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The header parser never panics and refuses without the pieces.
        #[test]
        fn any_header_is_parsed_or_refused(header in "[tv1=,0-9a-f ]{0,64}") {
            if let Ok((timestamp, candidates)) = parse(&header) {
                prop_assert!(!candidates.is_empty());
                prop_assert!(timestamp.bytes().all(|b| b.is_ascii_digit()));
            }
        }
    }
}
