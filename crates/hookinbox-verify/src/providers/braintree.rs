//! `braintree` — Braintree webhooks: the form fields `bt_signature` and
//! `bt_payload`.
//!
//! Follows Braintree's "Webhooks: Parse" guide (developer.paypal.com/
//! braintree/docs/guides/webhooks/parse) and its SDK's parser,
//! braintree_python `WebhookNotificationGateway.parse` (PyPI `braintree`),
//! which signed and checked the fixtures.
//!
//! - Body: `application/x-www-form-urlencoded` with exactly one
//!   `bt_signature` and one `bt_payload`. `bt_payload` is the notification
//!   XML in base64, as Braintree writes it (76-character lines, each ending
//!   in a newline).
//! - Signature: `bt_signature` = `"{public key}|{hex HMAC-SHA1}"`, several
//!   pairs joined by `&` while keys rotate. The HMAC is of the `bt_payload`
//!   text exactly as decoded from the form, keyed with the **SHA-1 digest of
//!   the API private key**; like the SDKs, the payload with one newline
//!   added counts too (some frameworks strip the last one). The configured
//!   secret is the private key exactly as the Control Panel shows it (the
//!   adapter derives the HMAC key). The public key only names which key
//!   pair signed; it is not a secret and not checked: a pair verifies when
//!   its HMAC is the private key's.
//! - Tolerance: none. The payload's `timestamp` is signed but is the time
//!   of the notification, which Braintree's retries re-send unchanged.
//! - Event id: **Braintree sends none.** The id is composed of signed
//!   payload values a retry re-sends unchanged:
//!   `"{kind}:{timestamp}:{subject id}"` (the `id` of the subject's object,
//!   `"{kind}:{timestamp}"` for subjects without one, such as `check`). A
//!   natural key, not a hash. A payload without `kind` or `timestamp` is
//!   `missing_event_id`.
//! - Type: `kind` (`subscription_went_past_due`, `check` for the Control
//!   Panel's "Check URL"). Object id: the subject's `id`. Created:
//!   `timestamp` (RFC 3339). No object version.
//! - Not covered: the legacy `bt_challenge` GET (the Control Panel now
//!   checks a URL with a signed `check` notification, which is accepted as
//!   an event).
//! - Redelivery window: Braintree retries a notification that was not
//!   answered with a 2xx hourly, for up to 24 hours; 24 hours are kept.

use base64::Engine;
use sha1::Digest;

use crate::envelope::Envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    encoding, Adapter, Algorithm, Candidate, Key, KeyError, Outcome, ProviderFacts, Refusal,
    Request, SignatureClaim, SignatureCoverage, SignedMessage, VectorSource,
};

/// The form field holding the signature pairs.
const SIGNATURE_FIELD: &str = "bt_signature";

/// The form field holding the base64 notification XML.
const PAYLOAD_FIELD: &str = "bt_payload";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Braintree",
    docs_url: "https://developer.paypal.com/braintree/docs/guides/webhooks/parse",
    scheme:
        "HMAC-SHA1 keyed with SHA-1(private key), hex, form field `bt_signature` (`public_key|hex`)",
    signed_parts: "form field `bt_payload` (base64 of the notification XML) as sent",
    id_source: "`{kind}:{timestamp}:{subject id}` of the payload",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("braintree (PyPI)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Braintree;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Braintree))
}

impl Adapter for Braintree {
    fn name(&self) -> &'static str {
        "braintree"
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

    /// The HMAC covers the whole payload, from which the id and kind are read.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    /// The HMAC key is the SHA-1 digest of the private key, as every
    /// Braintree SDK derives it.
    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        let private_key = secret.trim();
        if private_key.is_empty() {
            return Err(KeyError::Empty);
        }
        Ok(Key::Hmac(
            sha1::Sha1::digest(private_key.as_bytes()).to_vec().into(),
        ))
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let form = Form::read(request.body)?;
        let candidates: Vec<Candidate> = form
            .signature
            .split('&')
            .filter_map(|pair| pair.split_once('|'))
            .filter_map(|(_, hex)| encoding::hex_signature(hex))
            .filter(|mac| mac.len() == 20)
            .map(|mac| Candidate::new(Algorithm::HmacSha1, mac))
            .collect();
        if candidates.is_empty() {
            return Err(Refusal::malformed_signature(
                "bt_signature holds no `public_key|hex` pair",
            ));
        }
        let mut with_newline = form.payload.clone();
        with_newline.push('\n');
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new()
                .owned(form.payload)
                .or(SignedMessage::new().owned(with_newline)),
            candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let form = Form::read(request.body)?;
        let compact: String = form.payload.split_whitespace().collect();
        let xml = base64::engine::general_purpose::STANDARD
            .decode(compact)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| Refusal::malformed_body("bt_payload is not base64 of UTF-8 text"))?;
        let document = roxmltree::Document::parse(&xml)
            .map_err(|_| Refusal::malformed_body("bt_payload is not well-formed XML"))?;
        let notification = document.root_element();
        if !notification.has_tag_name("notification") {
            return Err(Refusal::malformed_body(
                "bt_payload is not a <notification>",
            ));
        }
        let (Some(kind), Some(timestamp)) = (
            child_text(notification, "kind"),
            child_text(notification, "timestamp"),
        ) else {
            return Err(Refusal::missing_event_id(
                "the notification has no <kind> and <timestamp> to name it",
            ));
        };
        let subject_id = child(notification, "subject")
            .and_then(|subject| subject.children().find(roxmltree::Node::is_element))
            .and_then(|object| child_text(object, "id"));
        let event_id = match &subject_id {
            Some(id) => format!("{kind}:{timestamp}:{id}"),
            None => format!("{kind}:{timestamp}"),
        };
        let event = Envelope::with_id(event_id)?
            .event_type(Some(kind))
            .object_id(subject_id)
            .created_at(crate::envelope::rfc3339_seconds(&timestamp));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        // A body that is already Braintree's form is signed again (keeping its
        // public key); any other body is the notification XML to send.
        let (public_key, payload) = match Form::read(outgoing.body) {
            Ok(form) => {
                let public_key = form
                    .signature
                    .split_once('|')
                    .map_or(DEFAULT_PUBLIC_KEY, |(public_key, _)| public_key)
                    .to_owned();
                (public_key, form.payload)
            }
            Err(_) => (DEFAULT_PUBLIC_KEY.to_owned(), encode_payload(outgoing.body)),
        };
        Ok(crate::signer::SignedRequest::form(&form_body(
            secret,
            &public_key,
            &payload,
        )))
    }
}

/// The public key a signer names when it is given none.
#[cfg(feature = "sign")]
const DEFAULT_PUBLIC_KEY: &str = "hookinbox";

/// The two fields of a Braintree notification, each present exactly once.
struct Form {
    signature: String,
    payload: String,
}

impl Form {
    fn read(body: &[u8]) -> Result<Form, Refusal> {
        let mut signature = None;
        let mut payload = None;
        for (name, value) in form_urlencoded::parse(body) {
            let slot = match name.as_ref() {
                SIGNATURE_FIELD => &mut signature,
                PAYLOAD_FIELD => &mut payload,
                _ => continue,
            };
            if slot.replace(value.into_owned()).is_some() {
                return Err(Refusal::malformed_signature(format!(
                    "the form repeats `{name}`"
                )));
            }
        }
        let present = |value: Option<String>, field: &str| {
            value
                .filter(|value| !value.trim().is_empty())
                .ok_or_else(|| Refusal::missing_signature(format!("no form field `{field}`")))
        };
        Ok(Form {
            signature: present(signature, SIGNATURE_FIELD)?,
            payload: present(payload, PAYLOAD_FIELD)?,
        })
    }
}

fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    node.children().find(|child| child.has_tag_name(name))
}

fn child_text(node: roxmltree::Node<'_, '_>, name: &str) -> Option<String> {
    child(node, name)?
        .text()
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

/// The notification XML as Braintree's SDKs encode it: base64 in lines of
/// 76 characters, each ending in a newline (Python's `encodebytes`).
#[cfg(feature = "sign")]
pub fn encode_payload(xml: &[u8]) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(xml);
    let mut lines = String::with_capacity(encoded.len() + encoded.len() / 76 + 1);
    for chunk in encoded.as_bytes().chunks(76) {
        lines.push_str(&String::from_utf8_lossy(chunk));
        lines.push('\n');
    }
    lines
}

/// The form body Braintree posts: `bt_signature` (`public_key|hex` under
/// `hmac_key`, the SHA-1 of the private key) and `bt_payload`.
#[cfg(feature = "sign")]
pub fn form_body(hmac_key: &[u8], public_key: &str, payload: &str) -> Vec<u8> {
    let mac = crate::signature::hmac_sha1(hmac_key, &[payload.as_bytes()]);
    form_urlencoded::Serializer::new(String::new())
        .append_pair(
            SIGNATURE_FIELD,
            &format!("{public_key}|{}", hex::encode(mac)),
        )
        .append_pair(PAYLOAD_FIELD, payload)
        .finish()
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const PRIVATE_KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
    const XML: &str = r#"<notification>
  <timestamp type="datetime">2023-11-14T22:13:20Z</timestamp>
  <kind>subscription_went_past_due</kind>
  <subject>
    <subscription>
      <id>sub_8j3kq2</id>
      <transactions type="array"></transactions>
      <add_ons type="array"></add_ons>
      <discounts type="array"></discounts>
    </subscription>
  </subject>
</notification>
"#;

    fn hmac_key(private_key: &str) -> Vec<u8> {
        sha1::Sha1::digest(private_key.as_bytes()).to_vec()
    }

    fn body(private_key: &str, xml: &str) -> Vec<u8> {
        form_body(
            &hmac_key(private_key),
            "pub_key_1",
            &encode_payload(xml.as_bytes()),
        )
    }

    fn verify(body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Braintree), PRIVATE_KEY);
        let headers: Headers = [("Content-Type", "application/x-www-form-urlencoded")]
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_composed_id() {
        let verified = verify(&body(PRIVATE_KEY, XML)).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "subscription_went_past_due:2023-11-14T22:13:20Z:sub_8j3kq2"
        );
        assert_eq!(
            event.event_type.as_deref(),
            Some("subscription_went_past_due")
        );
        assert_eq!(event.object_id.as_deref(), Some("sub_8j3kq2"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn a_check_has_no_subject_id() {
        let check = r#"<notification><timestamp type="datetime">2023-11-14T22:13:20Z</timestamp><kind>check</kind><subject><check type="boolean">true</check></subject></notification>"#;
        let verified = verify(&body(PRIVATE_KEY, check)).unwrap();
        assert_eq!(
            verified.event().unwrap().event_id,
            "check:2023-11-14T22:13:20Z"
        );
    }

    #[test]
    fn rotation_pairs_and_a_stripped_newline_verify() {
        let payload = encode_payload(XML.as_bytes());
        let good = hex::encode(crate::signature::hmac_sha1(
            &hmac_key(PRIVATE_KEY),
            &[payload.as_bytes()],
        ));
        let signature = format!("old_pub|{}&pub_key_1|{good}", "00".repeat(20));
        let stripped = payload.trim_end().to_owned();
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair(SIGNATURE_FIELD, &signature)
            .append_pair(PAYLOAD_FIELD, &stripped)
            .finish();
        assert!(verify(form.as_bytes()).is_ok());
    }

    #[test]
    fn refusals() {
        assert_eq!(
            verify(&body("another-private-key", XML)).unwrap_err(),
            Reason::Signature
        );
        // Keyed with the private key itself instead of its SHA-1 digest.
        let payload = encode_payload(XML.as_bytes());
        let raw_key = form_body(PRIVATE_KEY.as_bytes(), "pub", &payload);
        assert_eq!(verify(&raw_key).unwrap_err(), Reason::Signature);
        let tampered = XML.replace("sub_8j3kq2", "sub_8j3kq3");
        let mac_of_other = body(PRIVATE_KEY, &tampered);
        let (signature_part, _) = std::str::from_utf8(&mac_of_other)
            .unwrap()
            .split_once('&')
            .unwrap();
        let mixed = format!(
            "{signature_part}&bt_payload={}",
            form_urlencoded::byte_serialize(payload.as_bytes()).collect::<String>()
        );
        assert_eq!(verify(mixed.as_bytes()).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(b"bt_payload=abc").unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(b"bt_signature=pub%7Czz&bt_payload=abc").unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify(b"bt_signature=a%7C00&bt_signature=b%7C00&bt_payload=abc").unwrap_err(),
            Reason::MalformedSignature
        );
        let no_kind = r#"<notification><timestamp>2023-11-14T22:13:20Z</timestamp></notification>"#;
        assert_eq!(
            verify(&body(PRIVATE_KEY, no_kind)).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(&body(PRIVATE_KEY, "<notification><kind>")).unwrap_err(),
            Reason::MalformedBody
        );
        assert_eq!(
            verify(&body(PRIVATE_KEY, "<other/>")).unwrap_err(),
            Reason::MalformedBody
        );
    }

    #[test]
    fn the_signer_keeps_a_forms_public_key() {
        let signed = Braintree
            .sign(&crate::signer::Outgoing {
                body: &body("old-key", XML),
                secret: PRIVATE_KEY,
                now: 0,
                event_id: "ignored",
            })
            .unwrap();
        assert_eq!(signed.body, body(PRIVATE_KEY, XML));
        assert!(verify(&signed.body).is_ok());
    }

    fn signs(payload: &[u8], mac: &[u8]) -> bool {
        let signature = format!("pub_key_1|{}", hex::encode(mac));
        let form = format!(
            "bt_signature={}&bt_payload={}",
            form_urlencoded::byte_serialize(signature.as_bytes()).collect::<String>(),
            form_urlencoded::byte_serialize(payload).collect::<String>()
        );
        let key = Braintree.parse_key(PRIVATE_KEY).unwrap();
        Braintree
            .claim(&crate::Request::new(&Headers::new(), form.as_bytes()))
            .is_ok_and(|claim| claim.is_signed_by(&key))
    }

    proptest::proptest! {
        /// The signature sits in the body, so the property is stated over
        /// the signed field and the MAC: a changed byte of either never
        /// verifies.
        #[test]
        fn single_byte_changes_never_verify(
            xml in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..200),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            flip in 1u8..,
        ) {
            let payload = encode_payload(&xml).into_bytes();
            let mac = crate::signature::hmac_sha1(&hmac_key(PRIVATE_KEY), &[&payload]);
            proptest::prop_assert!(signs(&payload, &mac));
            let mut changed = payload.clone();
            changed[at.index(payload.len())] ^= flip;
            proptest::prop_assert!(!signs(&changed, &mac));
            let mut bad = mac.clone();
            bad[at.index(mac.len())] ^= flip;
            proptest::prop_assert!(!signs(&payload, &bad));
        }
    }
}
