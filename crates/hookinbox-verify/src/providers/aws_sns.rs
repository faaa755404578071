//! `aws_sns` — Amazon SNS messages to an HTTP(S) subscription, verified with
//! the certificate SNS names (docs/architecture.md §3, "Keys fetched from the
//! provider").
//!
//! Follows "Verifying the signatures of Amazon SNS messages"
//! (docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html)
//! and the message formats of "Parsing message formats" (`sns-message-and-json-formats`):
//!
//! - Everything is in the JSON body (sent as `text/plain`): `Type`,
//!   `MessageId`, `TopicArn`, `Message`, `Timestamp`, `SignatureVersion`,
//!   `Signature` (standard base64), `SigningCertURL`; `Subject` on some
//!   notifications; `Token` and `SubscribeURL` on the confirmations.
//! - Signed bytes: the "string to sign", each signed field as
//!   `{name}\n{value}\n` in this order — for a `Notification`: `Message`,
//!   `MessageId`, `Subject` (only when present), `Timestamp`, `TopicArn`,
//!   `Type`; for a `SubscriptionConfirmation` or an
//!   `UnsubscribeConfirmation`: `Message`, `MessageId`, `SubscribeURL`,
//!   `Timestamp`, `Token`, `TopicArn`, `Type`. The values are the JSON
//!   strings decoded (escapes undone), as AWS says.
//! - Algorithm: `SignatureVersion` 1 is RSA PKCS#1 v1.5 with SHA-1 (SNS's
//!   default), 2 the same with SHA-256. Any other version is refused.
//! - Key: none configured. The adapter names `SigningCertURL`; the service
//!   fetches it only from `https://sns.<region>.amazonaws.com/….pem`, checks
//!   its chain and its name, and caches it.
//! - The signature covers the fields above and nothing else of the body:
//!   `MessageAttributes`, `UnsubscribeURL` and `SigningCertURL` are not
//!   signed (declared as signed fields, like Adyen).
//! - Tolerance: one hour, on the signed `Timestamp`. SNS redelivers the very
//!   same signed message, and its HTTP delivery policy keeps retrying for at
//!   most an hour.
//! - Event id: `MessageId` (signed, the same on every retry). Type: the SNS
//!   `Type` (signed). Created: `Timestamp`. No object id.
//! - Subscription handshake: a `SubscriptionConfirmation` is verified like
//!   any message and stored as an event of type `SubscriptionConfirmation`,
//!   so the operator (or the system its targets reach) confirms it by
//!   visiting its signed `SubscribeURL`. hookinbox never fetches a URL from
//!   a request body on its own: an automatic confirmation would let anyone
//!   who can get a topic to publish here subscribe the endpoint to it.
//! - Redelivery window: one hour.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Candidate, Key, KeyError, KeyReference, Outcome, Refusal,
    Request, SignatureClaim, SignatureCoverage, SignedMessage,
};

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Amazon SNS",
    docs_url: "https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html",
    scheme: "RSA PKCS#1 v1.5 (SignatureVersion 1: SHA-1, 2: SHA-256) under the certificate at `SigningCertURL`, fetched from `sns.<region>.amazonaws.com` only; base64 `Signature` in the body",
    signed_parts: "`name\\nvalue\\n` of Message, MessageId, Subject (if any), SubscribeURL and Token (confirmations), Timestamp, TopicArn, Type",
    id_source: "body `MessageId`",
    handshake: Some("`SubscriptionConfirmation` verified and stored; the operator visits its signed `SubscribeURL`"),
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/key_fetch_vectors.py",
    ),
    signing: crate::Signing::Asymmetric,
};

/// The fields each message type signs, in the order they are signed.
const NOTIFICATION_FIELDS: &[&str] = &[
    "Message",
    "MessageId",
    "Subject",
    "Timestamp",
    "TopicArn",
    "Type",
];
const CONFIRMATION_FIELDS: &[&str] = &[
    "Message",
    "MessageId",
    "SubscribeURL",
    "Timestamp",
    "Token",
    "TopicArn",
    "Type",
];

#[derive(Debug, Default)]
pub struct AwsSns;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(AwsSns))
}

/// The body as SNS sends it, before anything is verified. Every field is
/// read as the decoded JSON string (what AWS signs).
fn message(body: &[u8]) -> Result<serde_json::Map<String, serde_json::Value>, Refusal> {
    match serde_json::from_slice(body) {
        Ok(serde_json::Value::Object(fields)) => Ok(fields),
        _ => Err(Refusal::malformed_signature(
            "the body is not an SNS message (a JSON object)",
        )),
    }
}

fn field<'m>(
    fields: &'m serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> Option<&'m str> {
    fields.get(name).and_then(serde_json::Value::as_str)
}

impl Adapter for AwsSns {
    fn name(&self) -> &'static str {
        "aws_sns"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(3600)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3600
    }

    /// The signed fields hold the id (`MessageId`), the type (`Type`) and
    /// the message; the rest of the body is not signed.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::SignedFields,
            event_id: true,
            event_type: true,
        }
    }

    fn parse_key(&self, _secret: &str) -> Result<Key, KeyError> {
        Err(KeyError::FetchedFromProvider)
    }

    fn fetches_keys(&self) -> bool {
        true
    }

    fn key_reference(&self, request: &Request<'_>) -> Result<Option<KeyReference>, Refusal> {
        let fields = message(request.body)?;
        let url = field(&fields, "SigningCertURL")
            .filter(|url| !url.is_empty())
            .ok_or_else(|| Refusal::missing_signature("no SigningCertURL in the message"))?;
        Ok(Some(KeyReference::Certificate {
            url: url.to_owned(),
        }))
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let fields = message(request.body)?;
        let signature = field(&fields, "Signature")
            .filter(|s| !s.is_empty())
            .ok_or_else(|| Refusal::missing_signature("no Signature in the message"))?;
        let signature = crate::key::decode_base64(signature)
            .ok_or_else(|| Refusal::malformed_signature("Signature is not base64"))?;
        let algorithm = match field(&fields, "SignatureVersion") {
            Some("1") => Algorithm::RsaPkcs1Sha1,
            Some("2") => Algorithm::RsaPkcs1Sha256,
            _ => {
                return Err(Refusal::malformed_signature(
                    "SignatureVersion is neither 1 nor 2",
                ))
            }
        };
        let signed_fields = match field(&fields, "Type") {
            Some("Notification") => NOTIFICATION_FIELDS,
            Some("SubscriptionConfirmation" | "UnsubscribeConfirmation") => CONFIRMATION_FIELDS,
            _ => {
                return Err(Refusal::malformed_signature(
                    "Type is not an SNS message type",
                ))
            }
        };
        let mut string_to_sign = String::new();
        for name in signed_fields {
            match field(&fields, name) {
                Some(value) => {
                    string_to_sign.push_str(name);
                    string_to_sign.push('\n');
                    string_to_sign.push_str(value);
                    string_to_sign.push('\n');
                }
                // Only a notification's Subject may be absent.
                None if *name == "Subject" => {}
                None => {
                    return Err(Refusal::malformed_signature(format!(
                        "no {name} in the message"
                    )))
                }
            }
        }
        let timestamp = field(&fields, "Timestamp")
            .and_then(envelope::rfc3339_seconds)
            .ok_or_else(|| Refusal::timestamp("Timestamp is not RFC 3339"))?;
        Ok(SignatureClaim {
            timestamp: Some(timestamp),
            message: SignedMessage::new().owned(string_to_sign),
            candidates: vec![Candidate::new(algorithm, signature)],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let event: Envelope = envelope::required_id_at(&body, "/MessageId")?
            .event_type(envelope::string_at(&body, "/Type"))
            .created_at(envelope::rfc3339_at(&body, "/Timestamp"));
        Ok(Outcome::Event(event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::paypal::testing::{rsa_sign, PUBLIC_PEM};
    use crate::{Headers, Reason, ResolvedKey, SecretInput, Verified, Verifier};

    const CERT: &str = "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem";
    const NOW: i64 = 1_767_225_600;
    const TIMESTAMP: &str = "2026-01-01T00:00:00.000Z";

    fn notification(subject: Option<&str>, version: &str, sign_as: Option<&str>) -> Vec<u8> {
        let mut fields = serde_json::json!({
            "Type": "Notification",
            "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
            "TopicArn": "arn:aws:sns:us-west-2:123456789012:MyTopic",
            "Message": "Hello \"world\"!\nsecond line",
            "Timestamp": TIMESTAMP,
            "SignatureVersion": version,
            "SigningCertURL": CERT,
            "UnsubscribeURL": "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe",
        });
        if let Some(subject) = subject {
            fields["Subject"] = subject.into();
        }
        let mut to_sign = String::new();
        for name in NOTIFICATION_FIELDS {
            if let Some(value) = fields.get(*name).and_then(|v| v.as_str()) {
                to_sign.push_str(&format!("{name}\n{value}\n"));
            }
        }
        let to_sign = sign_as.map(str::to_owned).unwrap_or(to_sign);
        // ring signs no SHA-1: version 1 is covered by the Python vectors
        // (`tests/fixtures/key_fetch/aws_sns.jsonl`); here a SHA-256
        // signature is labelled with whichever version the test says.
        fields["Signature"] =
            rsa_sign(&ring::signature::RSA_PKCS1_SHA256, to_sign.as_bytes()).into();
        serde_json::to_vec(&fields).unwrap()
    }

    fn verify_at(body: &[u8], now: i64) -> Result<Verified, Reason> {
        let verifier = Verifier::new(Box::new(AwsSns), Vec::<SecretInput>::new()).unwrap();
        let fetched = ResolvedKey {
            reference: KeyReference::Certificate { url: CERT.into() },
            key: Key::rsa_from_spki_pem(PUBLIC_PEM).unwrap(),
        };
        let headers = Headers::new();
        verifier
            .verify_with_keys(&Request::new(&headers, body), now, &fetched)
            .map_err(|f| f.refusal.reason)
    }

    #[test]
    fn version_2_verifies_with_and_without_a_subject() {
        for version in ["2"] {
            for subject in [None, Some("My First Message")] {
                let verified = verify_at(&notification(subject, version, None), NOW)
                    .unwrap_or_else(|r| panic!("v{version} {subject:?}: {r}"));
                let event = verified.event().unwrap();
                assert_eq!(event.event_id, "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324");
                assert_eq!(event.event_type.as_deref(), Some("Notification"));
                assert_eq!(event.created_at, Some(NOW));
            }
        }
    }

    #[test]
    fn a_confirmation_is_an_event_to_store() {
        let mut fields = serde_json::json!({
            "Type": "SubscriptionConfirmation",
            "MessageId": "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
            "Token": "2336412f37",
            "TopicArn": "arn:aws:sns:us-west-2:123456789012:MyTopic",
            "Message": "You have chosen to subscribe to the topic",
            "SubscribeURL": "https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription&Token=2336412f37",
            "Timestamp": TIMESTAMP,
            "SignatureVersion": "2",
            "SigningCertURL": CERT,
        });
        let mut to_sign = String::new();
        for name in CONFIRMATION_FIELDS {
            to_sign.push_str(&format!("{name}\n{}\n", fields[*name].as_str().unwrap()));
        }
        fields["Signature"] =
            rsa_sign(&ring::signature::RSA_PKCS1_SHA256, to_sign.as_bytes()).into();
        let body = serde_json::to_vec(&fields).unwrap();
        let verified = verify_at(&body, NOW).unwrap();
        assert_eq!(
            verified.event().unwrap().event_type.as_deref(),
            Some("SubscriptionConfirmation")
        );
        // The Token is signed: another one is refused.
        fields["Token"] = "2336412f38".into();
        let body = serde_json::to_vec(&fields).unwrap();
        assert_eq!(verify_at(&body, NOW).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn refusals() {
        // A signed field changed after signing.
        let body = notification(None, "2", None);
        let changed = String::from_utf8(body.clone())
            .unwrap()
            .replace("Hello", "Hellp");
        assert_eq!(
            verify_at(changed.as_bytes(), NOW).unwrap_err(),
            Reason::Signature
        );
        // Signed over another string (the Subject left out of what was signed).
        let other = notification(Some("s"), "2", Some("Message\nx\n"));
        assert_eq!(verify_at(&other, NOW).unwrap_err(), Reason::Signature);
        // A SHA-256 signature presented as version 1.
        let relabelled = String::from_utf8(body.clone())
            .unwrap()
            .replace("\"SignatureVersion\":\"2\"", "\"SignatureVersion\":\"1\"");
        assert_eq!(
            verify_at(relabelled.as_bytes(), NOW).unwrap_err(),
            Reason::Signature
        );
        let unknown = String::from_utf8(body.clone())
            .unwrap()
            .replace("\"SignatureVersion\":\"2\"", "\"SignatureVersion\":\"3\"");
        assert_eq!(
            verify_at(unknown.as_bytes(), NOW).unwrap_err(),
            Reason::MalformedSignature
        );
        // Stale and future by more than the hour.
        assert!(verify_at(&body, NOW + 3600).is_ok());
        assert_eq!(verify_at(&body, NOW + 3601).unwrap_err(), Reason::Timestamp);
        assert_eq!(verify_at(&body, NOW - 3601).unwrap_err(), Reason::Timestamp);
        assert_eq!(
            verify_at(b"not json", NOW).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(verify_at(b"{}", NOW).unwrap_err(), Reason::MissingSignature);
    }

    #[test]
    fn the_key_reference_is_the_signing_cert_url() {
        let headers = Headers::new();
        let body = notification(None, "2", None);
        assert_eq!(
            AwsSns
                .key_reference(&Request::new(&headers, &body))
                .unwrap(),
            Some(KeyReference::Certificate { url: CERT.into() })
        );
    }
}
