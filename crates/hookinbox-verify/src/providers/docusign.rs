//! `docusign` — DocuSign Connect (JSON, "Send Individual Messages") with HMAC
//! security (`X-DocuSign-Signature-1` … `-100`).
//!
//! Follows DocuSign's "HMAC security" and "How to validate an HMAC signature"
//! pages (developers.docusign.com/platform/webhooks/connect/hmac,
//! …/connect/validate), whose worked example keys the HMAC with
//! `Encoding.UTF8.GetBytes(secret)`.
//!
//! - Headers: `X-DocuSign-Signature-1`, `-2`, … up to `-100`: one per HMAC
//!   key active on the account (an account holds up to 100), each the
//!   standard base64 of the HMAC-SHA256 of the raw body under that key. One
//!   matching is enough, so the key can rotate. Read in order until the
//!   first number that is absent. `X-Authorization-Digest: HMACSHA256` names
//!   the algorithm and is not read.
//! - Secret: a Connect key as the Connect keys page shows it (a base64-looking
//!   string), used as its UTF-8 bytes, not decoded.
//! - Tolerance: none. DocuSign signs no timestamp.
//! - Event id: DocuSign sends none. It is composed of signed values:
//!   `"{event}:{data.envelopeId}[:{data.recipientId}]:{generatedDateTime}"`
//!   (`templateId` where a template event has no envelope). The body's
//!   `retryCount` grows with each retry and is left out, so a retry has the
//!   same id; its body then differs from the first one's, which hookinbox's
//!   dedup answers as a conflict (409) — the first delivery is stored and
//!   nothing is lost, but DocuSign sees the retry fail. Without `event` or
//!   `generatedDateTime`: `missing_event_id`. An XML (legacy) message is
//!   `malformed_body`.
//! - Type: `event` (`envelope-completed`, `recipient-sent`). Object id:
//!   `data.envelopeId`. Created: `generatedDateTime`. No object version.
//! - Batch: none with SIM; aggregate (legacy) messages are not supported.
//! - Redelivery window: Connect retries failed messages for days (its
//!   failure page describes retries over up to two weeks); 15 days are kept,
//!   an upper bound rather than a documented span.

use crate::envelope::{Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, SignedMessage, VectorSource,
};

/// How many `X-DocuSign-Signature-N` headers an account can send: one per
/// Connect key, and an account holds at most 100.
const MAX_SIGNATURES: usize = 100;

/// The header of the `n`th signature (from 1).
fn signature_header(name: &str) -> SignatureHeader<'_> {
    SignatureHeader::base64(name, Algorithm::HmacSha256).with_length(32)
}

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "DocuSign Connect",
    docs_url: "https://developers.docusign.com/platform/webhooks/connect/hmac/",
    scheme: "HMAC-SHA256, base64, `X-DocuSign-Signature-1` … `-100` (one per Connect key)",
    signed_parts: "raw body",
    id_source: "`{event}:{data.envelopeId}[:{data.recipientId}]:{generatedDateTime}`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/ops_commerce_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

const EVENT: &str = "/event";
const GENERATED: &str = "/generatedDateTime";
const ENVELOPE: &str = "/data/envelopeId";
const TEMPLATE: &str = "/data/templateId";
const RECIPIENT: &str = "/data/recipientId";

#[derive(Debug, Default)]
pub struct DocuSign;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(DocuSign))
}

impl Adapter for DocuSign {
    fn name(&self) -> &'static str {
        "docusign"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        15 * 24 * 3600
    }

    /// HMAC over the body, from which the id and the type are composed.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let mut candidates = Vec::new();
        for n in 1..=MAX_SIGNATURES {
            let name = format!("X-DocuSign-Signature-{n}");
            let Some(value) = request.headers.get_nonempty(&name) else {
                break;
            };
            candidates.push(signature_header(&name).decode(value)?);
        }
        if candidates.is_empty() {
            return Err(Refusal::missing_signature(
                "no X-DocuSign-Signature-1 header",
            ));
        }
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new().borrowed(request.body),
            candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let fields = JsonFields::read(
            request.body,
            &[EVENT, GENERATED, ENVELOPE, TEMPLATE, RECIPIENT],
        )?;
        let (Some(event), Some(generated)) = (fields.string_at(EVENT), fields.string_at(GENERATED))
        else {
            return Err(Refusal::missing_event_id(
                "no `event` and `generatedDateTime` to name the message",
            ));
        };
        let object = fields
            .string_at(ENVELOPE)
            .or_else(|| fields.string_at(TEMPLATE));
        let mut id = event.clone();
        for part in [object.clone(), fields.string_at(RECIPIENT)]
            .into_iter()
            .flatten()
        {
            id.push(':');
            id.push_str(&part);
        }
        id.push(':');
        id.push_str(&generated);
        let created = crate::envelope::rfc3339_seconds(&generated);
        let envelope = Envelope::with_id(id)?
            .event_type(Some(event))
            .object_id(object)
            .created_at(created);
        Ok(Outcome::Event(envelope))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(
            crate::signer::body_hmac(&signature_header("X-DocuSign-Signature-1"), &key, outgoing)?
                .header("X-Authorization-Digest", "HMACSHA256"),
        )
    }
}

/// The `X-DocuSign-Signature-N` value DocuSign sends for `body` under one
/// Connect key. For tests and examples.
pub fn sign(connect_key: &str, body: &[u8]) -> String {
    signature_header("X-DocuSign-Signature-1").sign_hmac(connect_key.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const KEY: &str = "oaxh3TmxJ9cFpwNuMLTdd7hw5bXxVAeBqtpn3vCtcZk=";
    const BODY: &[u8] = br#"{"event":"recipient-completed","apiVersion":"v2.1","uri":"/restapi/v2.1/accounts/0ee0c7c5-49e6-4eb0-b1b8-a94b64b2d9a4/envelopes/4ee1c8ac-6c69-44e5-b6b4-3d8ac2ae4f2b","retryCount":0,"configurationId":10418,"generatedDateTime":"2023-11-14T22:13:20.5400000Z","data":{"accountId":"0ee0c7c5-49e6-4eb0-b1b8-a94b64b2d9a4","userId":"c5a5d7e0-2f4b-4f9c-b8c0-1c0c1a3b9d7e","envelopeId":"4ee1c8ac-6c69-44e5-b6b4-3d8ac2ae4f2b","recipientId":"1"}}"#;

    fn verify(signatures: &[&str], body: &[u8]) -> Result<Verified, Reason> {
        let mut headers = Headers::new();
        for (n, signature) in signatures.iter().enumerate() {
            headers.append(&format!("X-DocuSign-Signature-{}", n + 1), *signature);
        }
        headers.append("X-Authorization-Digest", "HMACSHA256");
        let verifier = test_support::verifier(Box::new(DocuSign), KEY);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_composes_the_id() {
        let verified = verify(&[&sign(KEY, BODY)], BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "recipient-completed:4ee1c8ac-6c69-44e5-b6b4-3d8ac2ae4f2b:1:2023-11-14T22:13:20.5400000Z"
        );
        assert_eq!(event.event_type.as_deref(), Some("recipient-completed"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("4ee1c8ac-6c69-44e5-b6b4-3d8ac2ae4f2b")
        );
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn any_of_the_numbered_signatures_may_match() {
        let other = sign("a-key-being-retired", BODY);
        assert!(verify(&[&other, &sign(KEY, BODY)], BODY).is_ok());
        assert_eq!(verify(&[&other], BODY).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn a_retry_has_the_same_id() {
        let retry = String::from_utf8(BODY.to_vec())
            .unwrap()
            .replace(r#""retryCount":0"#, r#""retryCount":3"#);
        let first = verify(&[&sign(KEY, BODY)], BODY).unwrap();
        let again = verify(&[&sign(KEY, retry.as_bytes())], retry.as_bytes()).unwrap();
        assert_eq!(
            first.event().unwrap().event_id,
            again.event().unwrap().event_id
        );
    }

    #[test]
    fn refusals() {
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify(&[&sign(KEY, BODY)], &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(&[], BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(&["%%%"], BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_time = br#"{"event":"envelope-sent","data":{"envelopeId":"e-1"}}"#;
        assert_eq!(
            verify(&[&sign(KEY, no_time)], no_time).unwrap_err(),
            Reason::MissingEventId
        );
        let xml = b"<DocuSignEnvelopeInformation/>";
        assert_eq!(
            verify(&[&sign(KEY, xml)], xml).unwrap_err(),
            Reason::MalformedBody
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            subject in any::<String>(),
            secret in "[A-Za-z0-9+/=]{1,44}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "event": "envelope-sent", "generatedDateTime": "2023-11-14T22:13:20Z",
                "data": {"envelopeId": "e-1", "envelopeSummary": {"emailSubject": subject}}
            }))
            .unwrap();
            let signed = Signed::in_header(
                Box::new(DocuSign), &secret, signature_header("X-DocuSign-Signature-1"), &sign(&secret, &body), &[],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
