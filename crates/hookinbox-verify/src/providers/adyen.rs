//! `adyen` — Adyen standard (payments) webhooks in JSON, with HMAC signatures.
//!
//! - Header: none. The signature travels *inside* the body, in
//!   `notificationItems[].NotificationRequestItem.additionalData.hmacSignature`
//!   (base64). The body is therefore parsed before verification — only to
//!   read the signed fields and the signature; nothing else is trusted until
//!   the signature matches.
//! - Signed bytes: eight fields of the item joined by `:` in this order:
//!   `pspReference`, `originalReference`, `merchantAccountCode`,
//!   `merchantReference`, `amount.value`, `amount.currency`, `eventCode`,
//!   `success`. A missing or `null` field is the empty string; numbers are
//!   written in decimal, booleans as `true`/`false`; values are not escaped
//!   (Adyen's libraries escape `\` and `:` only for the key-sorted payloads of
//!   hosted payment pages and platform webhooks, not for these). This is the
//!   data Adyen's `HmacValidator` / `is_valid_hmac_notification` sign.
//! - Algorithm and key: HMAC-SHA256 keyed with the *hex-decoded* HMAC key from
//!   the Customer Area.
//! - Tolerance: none — Adyen signs no timestamp.
//! - Batches: Adyen documents that JSON webhooks carry exactly one
//!   `NotificationRequestItem`. A body with any other number of items is
//!   refused as `malformed_body` before verification: hookinbox stores one
//!   logical event per request, and Adyen's own libraries check only the first
//!   item's signature, which would leave the others unauthenticated. Refusing
//!   keeps the message in Adyen's retry queue, visible, instead of storing
//!   unverified items.
//! - Event id: `"{pspReference}:{eventCode}:{success}"`. Adyen has no event id;
//!   it names the combination of `pspReference` and `eventCode` as the key to
//!   recognise duplicates, and all three fields are signed. `success` is part
//!   of the key because Adyen can send the same `pspReference` and `eventCode`
//!   again with a changed `success`; that is a new fact, not a retry, and must
//!   not be refused as a conflicting duplicate. Not a payload hash. No
//!   `pspReference` or `eventCode` → `missing_event_id`.
//! - Type: `eventCode`. Object id: `originalReference` when present (a
//!   modification points at its payment), else `pspReference`. Created:
//!   `eventDate`. No object version.
//! - Redelivery window: Adyen retries from its retry queue for up to 30 days.

use crate::encoding;
use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Candidate, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

/// The signed fields of a notification item, as JSON pointers, in order.
const SIGNED_FIELDS: [&str; 8] = [
    "/pspReference",
    "/originalReference",
    "/merchantAccountCode",
    "/merchantReference",
    "/amount/value",
    "/amount/currency",
    "/eventCode",
    "/success",
];

#[derive(Debug, Default)]
pub struct Adyen;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Adyen))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Adyen",
    docs_url: "https://docs.adyen.com/development-resources/webhooks/verify-hmac-signatures",
    scheme: "HMAC-SHA256 (hex-decoded HMAC key), base64, in the body: `additionalData.hmacSignature`",
    signed_parts: "eight item fields joined by `:` (`pspReference`, `originalReference`, `merchantAccountCode`, `merchantReference`, `amount.value`, `amount.currency`, `eventCode`, `success`)",
    id_source: "`{pspReference}:{eventCode}:{success}` from the signed fields",
    handshake: None,
    batch: Some("exactly one `NotificationRequestItem` per request (Adyen's JSON webhooks); any other count is refused as `malformed_body`"),
    vectors: VectorSource::OfficialSdk("Adyen (PyPI)"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Adyen {
    fn name(&self) -> &'static str {
        "adyen"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        30 * 24 * 3600
    }

    /// The HMAC covers eight fields of the item: every part of the id, the type
    /// (`eventCode`) and the amount; the rest of the body is not covered.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::SignedFields,
            event_id: true,
            event_type: true,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_hex(secret)
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let body = envelope::json(request.body)?;
        let item = notification_item(&body)?;
        let signature = match item.pointer("/additionalData/hmacSignature") {
            None | Some(serde_json::Value::Null) => {
                return Err(Refusal::missing_signature(
                    "no additionalData.hmacSignature in the notification item",
                ))
            }
            Some(serde_json::Value::String(text)) if text.trim().is_empty() => {
                return Err(Refusal::missing_signature(
                    "additionalData.hmacSignature is empty",
                ))
            }
            Some(serde_json::Value::String(text)) => {
                encoding::base64_signature(text).ok_or_else(|| {
                    Refusal::malformed_signature("additionalData.hmacSignature is not base64")
                })?
            }
            Some(_) => {
                return Err(Refusal::malformed_signature(
                    "additionalData.hmacSignature is not a string",
                ))
            }
        };
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new().owned(signed_data(item)?),
            candidates: vec![Candidate::new(Algorithm::HmacSha256, signature)],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let item = notification_item(&body)?;
        let field = |pointer: &str| envelope::string_at(item, pointer).filter(|v| !v.is_empty());
        let psp_reference = field("/pspReference")
            .ok_or_else(|| Refusal::missing_event_id("no pspReference in the notification item"))?;
        let event_code = field("/eventCode")
            .ok_or_else(|| Refusal::missing_event_id("no eventCode in the notification item"))?;
        let success = scalar_text(item.pointer("/success")).unwrap_or_default();
        let object_id = field("/originalReference").unwrap_or_else(|| psp_reference.clone());
        let event = envelope::Envelope::with_id(format!("{psp_reference}:{event_code}:{success}"))?
            .event_type(Some(event_code))
            .object_id(Some(object_id))
            .created_at(
                field("/eventDate")
                    .as_deref()
                    .and_then(envelope::rfc3339_seconds),
            );
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        use base64::Engine as _;
        // The signature travels in the body, in the one notification item's
        // `additionalData.hmacSignature`.
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let unfit = |refusal: Refusal| crate::signer::SignError::Body {
            provider: "adyen",
            reason: refusal.detail.into_owned(),
        };
        let mut body = envelope::json(outgoing.body).map_err(unfit)?;
        let signed = signed_data(notification_item(&body).map_err(unfit)?).map_err(unfit)?;
        let mac = crate::signature::hmac_sha256(secret, &[signed.as_bytes()]);
        let signature =
            serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(mac));
        if let Some(item) = body.pointer_mut("/notificationItems/0/NotificationRequestItem") {
            match item
                .get_mut("additionalData")
                .filter(|data| data.is_object())
            {
                Some(data) => data["hmacSignature"] = signature,
                None => item["additionalData"] = serde_json::json!({ "hmacSignature": signature }),
            }
        }
        let body = serde_json::to_vec(&body).map_err(|error| crate::signer::SignError::Body {
            provider: self.name(),
            reason: error.to_string(),
        })?;
        Ok(crate::signer::SignedRequest::json(&body))
    }
}

/// The one `NotificationRequestItem` of a JSON webhook.
fn notification_item(body: &serde_json::Value) -> Result<&serde_json::Value, Refusal> {
    let items = body
        .get("notificationItems")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| Refusal::malformed_body("no `notificationItems` array in the body"))?;
    let [item] = items.as_slice() else {
        return Err(Refusal::malformed_body(format!(
            "{} notification items; Adyen JSON webhooks carry exactly one",
            items.len()
        )));
    };
    item.get("NotificationRequestItem")
        .filter(|inner| inner.is_object())
        .ok_or_else(|| Refusal::malformed_body("no NotificationRequestItem object in the item"))
}

/// The exact string Adyen signs for one notification item.
fn signed_data(item: &serde_json::Value) -> Result<String, Refusal> {
    let mut parts = Vec::with_capacity(SIGNED_FIELDS.len());
    for pointer in SIGNED_FIELDS {
        let text = scalar_text(item.pointer(pointer)).ok_or_else(|| {
            Refusal::malformed_body(format!(
                "signed field `{}` is not a string, number or boolean",
                &pointer[1..]
            ))
        })?;
        parts.push(text);
    }
    Ok(parts.join(":"))
}

/// A signed field as Adyen's libraries render it: absent or `null` is empty.
/// `None` for objects and arrays, which no signed field may be.
fn scalar_text(value: Option<&serde_json::Value>) -> Option<String> {
    match value {
        None | Some(serde_json::Value::Null) => Some(String::new()),
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        Some(serde_json::Value::Bool(b)) => Some(b.to_string()),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::hmac_sha256;
    use crate::test_support;
    use crate::{Headers, Reason};
    use base64::Engine;
    use proptest::prelude::*;

    /// The example key of Adyen's own HMAC tools.
    const KEY: &str = "11223344D785FBAE710E7F943F307971BB61B21281C98C9129B3D4018A57B2EB";

    fn sign(key_hex: &str, data: &str) -> String {
        let mac = hmac_sha256(&hex::decode(key_hex).unwrap(), &[data.as_bytes()]);
        base64::engine::general_purpose::STANDARD.encode(mac)
    }

    /// A notification body whose item carries `signature` (omitted when `None`).
    fn body(success: &str, signature: Option<&str>) -> Vec<u8> {
        let additional = match signature {
            Some(sig) => format!(r#","additionalData":{{"hmacSignature":"{sig}"}}"#),
            None => String::new(),
        };
        format!(
            r#"{{"live":"false","notificationItems":[{{"NotificationRequestItem":{{"amount":{{"currency":"EUR","value":1130}},"eventCode":"AUTHORISATION","eventDate":"2023-11-14T23:13:20+01:00","merchantAccountCode":"TestMerchant","merchantReference":"order-1","pspReference":"7914073381342284","success":"{success}"{additional}}}}}]}}"#
        )
        .into_bytes()
    }

    const DATA: &str = "7914073381342284::TestMerchant:order-1:1130:EUR:AUTHORISATION:true";

    fn verify(body: &[u8]) -> Result<Outcome, Reason> {
        let verifier = test_support::verifier(Box::new(Adyen), KEY);
        test_support::verify(&verifier, &Headers::new(), body, 0).map(|v| v.into_outcome())
    }

    #[test]
    fn signed_notification_verifies_with_the_adyen_key() {
        let body = body("true", Some(&sign(KEY, DATA)));
        let Outcome::Event(event) = verify(&body).unwrap() else {
            panic!("expected an event");
        };
        assert_eq!(event.event_id, "7914073381342284:AUTHORISATION:true");
        assert_eq!(event.event_type.as_deref(), Some("AUTHORISATION"));
        assert_eq!(event.object_id.as_deref(), Some("7914073381342284"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn signed_data_follows_adyen_rendering_rules() {
        let item = serde_json::json!({
            "pspReference": "p:1",
            "originalReference": null,
            "merchantReference": "back\\slash",
            "amount": {"value": 0},
            "eventCode": "REFUND",
            "success": true,
        });
        assert_eq!(
            signed_data(&item).unwrap(),
            "p:1:::back\\slash:0::REFUND:true"
        );
        let nested = serde_json::json!({"pspReference": {"x": 1}});
        assert_eq!(
            signed_data(&nested).unwrap_err().reason,
            Reason::MalformedBody
        );
    }

    #[test]
    fn a_changed_success_is_a_new_event_not_a_duplicate() {
        let failed = "7914073381342284::TestMerchant:order-1:1130:EUR:AUTHORISATION:false";
        let Outcome::Event(event) = verify(&body("false", Some(&sign(KEY, failed)))).unwrap()
        else {
            panic!("expected an event");
        };
        assert_eq!(event.event_id, "7914073381342284:AUTHORISATION:false");
    }

    #[test]
    fn tampered_field_and_wrong_key_are_signature_refusals() {
        let signature = sign(KEY, DATA);
        assert_eq!(
            verify(&body("false", Some(&signature))).unwrap_err(),
            Reason::Signature
        );
        let other = "00".repeat(32);
        assert_eq!(
            verify(&body("true", Some(&sign(&other, DATA)))).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn missing_and_malformed_signatures() {
        assert_eq!(
            verify(&body("true", None)).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(&body("true", Some(""))).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(&body("true", Some("%%%"))).unwrap_err(),
            Reason::MalformedSignature
        );
        let numeric = br#"{"notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":5}}}]}"#;
        assert_eq!(verify(numeric).unwrap_err(), Reason::MalformedSignature);
    }

    #[test]
    fn bodies_that_are_not_one_notification_item_are_malformed() {
        let item = r#"{"NotificationRequestItem":{"pspReference":"p","additionalData":{"hmacSignature":"AAAA"}}}"#;
        for text in [
            "not json".to_owned(),
            r#"{"live":"false"}"#.to_owned(),
            r#"{"notificationItems":[]}"#.to_owned(),
            format!(r#"{{"notificationItems":[{item},{item}]}}"#),
            r#"{"notificationItems":[{"NotificationRequestItem":7}]}"#.to_owned(),
        ] {
            assert_eq!(
                verify(text.as_bytes()).unwrap_err(),
                Reason::MalformedBody,
                "{text}"
            );
        }
    }

    #[test]
    fn a_verified_item_without_references_has_no_event_id() {
        let data = ":::::::";
        let text = format!(
            r#"{{"notificationItems":[{{"NotificationRequestItem":{{"additionalData":{{"hmacSignature":"{}"}}}}}}]}}"#,
            sign(KEY, data)
        );
        assert_eq!(verify(text.as_bytes()).unwrap_err(), Reason::MissingEventId);
    }

    #[test]
    fn hmac_keys_are_hex() {
        assert_eq!(Adyen.parse_key("not hex").unwrap_err(), KeyError::Hex);
        assert!(Adyen.parse_key(KEY).is_ok());
        assert_eq!(Adyen.default_tolerance_seconds(), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_signed_item_verifies_and_any_changed_field_byte_does_not(
            key in proptest::collection::vec(any::<u8>(), 1..64),
            reference in "[ -~]{1,40}",
            index in any::<prop::sample::Index>(),
            flip in 1u8..=127,
        ) {
            let key_hex = hex::encode(&key);
            let parsed = Adyen.parse_key(&key_hex).unwrap();
            let make = |merchant_reference: &str, signature: &str| {
                serde_json::json!({"notificationItems": [{"NotificationRequestItem": {
                    "pspReference": "8815", "merchantReference": merchant_reference,
                    "amount": {"value": 1, "currency": "EUR"}, "eventCode": "CAPTURE",
                    "success": "true", "additionalData": {"hmacSignature": signature},
                }}]}).to_string()
            };
            let data = format!("8815:::{reference}:1:EUR:CAPTURE:true");
            let signature = sign(&key_hex, &data);
            let headers = Headers::new();
            let signed = |text: &str| Adyen.claim(&Request::new(&headers, text.as_bytes())).unwrap().is_signed_by(&parsed);
            prop_assert!(signed(&make(&reference, &signature)));
            let mut changed = reference.clone().into_bytes();
            let at = index.index(changed.len());
            changed[at] ^= flip;
            if let Ok(changed) = String::from_utf8(changed) {
                prop_assert!(!signed(&make(&changed, &signature)));
            }
            let mut raw = crate::key::decode_base64(&signature).unwrap();
            let at = index.index(raw.len());
            raw[at] ^= flip;
            let forged = base64::engine::general_purpose::STANDARD.encode(&raw);
            prop_assert!(!signed(&make(&reference, &forged)));
        }
    }
}
