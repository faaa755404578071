//! `webflow` — Webflow Data API webhooks (`x-webflow-signature`).
//!
//! Follows Webflow's "Working with webhooks" page
//! (developers.webflow.com/data/docs/working-with-webhooks, "Validating
//! request signatures") and its SDK's `webhooks.verifySignature`
//! (`webflow-api` on npm), which the vectors are checked with.
//!
//! - Headers: `x-webflow-timestamp` (unix *milliseconds*) and
//!   `x-webflow-signature` = hex HMAC-SHA256 of `"{timestamp}:{raw body}"`,
//!   the timestamp as sent, keyed with the secret exactly as Webflow gives
//!   it: the OAuth application's client secret for an app's webhooks, the
//!   webhook's own secret for one created with a site token, as UTF-8
//!   bytes. Webhooks Webflow sends unsigned (older site webhooks) carry no
//!   signature and are refused as `missing_signature`.
//! - Tolerance: 300 s in both directions; Webflow asks receivers to refuse
//!   requests older than 5 minutes.
//! - Body: `{"triggerType": "…", "payload": {…}}`. Webflow sends no event
//!   id; the id is composed of signed values,
//!   `"{triggerType}:{object}:{version}"`: the object is `payload.id`
//!   (form submission, CMS item, page, user), else `payload.orderId`, else
//!   `payload.site`/`payload.siteId`; the version is the payload's own
//!   time (`lastUpdated`, `submittedAt`, `publishedOn`), the same on a
//!   retry, else the signed `x-webflow-timestamp` (a retry is then a new
//!   id: delivered again rather than merged with another change of the
//!   same object). A natural key, not a hash. Without `triggerType` or an
//!   object: `missing_event_id`.
//! - Type: `triggerType` (`form_submission`). Object id: the object.
//!   Created: the version when it is a time. No object version.
//! - Redelivery window: Webflow retries failed deliveries a few times; the
//!   pages followed here give no span, so 24 hours are kept, an assumption.

use crate::envelope::{self, Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::unix_timestamp;
use crate::{
    encoding, Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, SignedMessage, VectorSource,
};

/// Hex HMAC-SHA256 of `"{timestamp}:{body}"`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("x-webflow-signature", Algorithm::HmacSha256).with_length(32);
const TIMESTAMP: &str = "x-webflow-timestamp";

/// Where the object of an event is named, in order.
const OBJECTS: [&str; 4] = [
    "/payload/id",
    "/payload/orderId",
    "/payload/site",
    "/payload/siteId",
];
/// The payload's own time of the change, in order.
const VERSIONS: [&str; 3] = [
    "/payload/lastUpdated",
    "/payload/submittedAt",
    "/payload/publishedOn",
];

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Webflow",
    docs_url: "https://developers.webflow.com/data/docs/working-with-webhooks",
    scheme: "HMAC-SHA256, hex, `x-webflow-signature` + `x-webflow-timestamp` (milliseconds)",
    signed_parts: "`{timestamp}:{body}`",
    id_source: "`{triggerType}:{payload.id…}:{lastUpdated, submittedAt, publishedOn or timestamp}` (signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("webflow-api (npm)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Webflow;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Webflow))
}

impl Adapter for Webflow {
    fn name(&self) -> &'static str {
        "webflow"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// HMAC over the timestamp and the body; the id is composed of both.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let signature = SIGNATURE.value(request.headers)?;
        let timestamp = unix_timestamp(request.headers, TIMESTAMP)?;
        Ok(SignatureClaim {
            timestamp: Some(encoding::unix_millis_as_seconds(timestamp.text, TIMESTAMP)?),
            message: SignedMessage::new()
                .owned(format!("{}:", timestamp.text))
                .borrowed(request.body),
            candidates: vec![SIGNATURE.decode(signature)?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let mut pointers = vec!["/triggerType"];
        pointers.extend(OBJECTS);
        pointers.extend(VERSIONS);
        let body = JsonFields::read(request.body, &pointers)?;
        let trigger = body
            .string_at("/triggerType")
            .ok_or_else(|| Refusal::missing_event_id("no `triggerType` in the body"))?;
        let object = OBJECTS
            .into_iter()
            .find_map(|pointer| body.string_at(pointer))
            .ok_or_else(|| Refusal::missing_event_id("no object id in the payload"))?;
        let version = VERSIONS
            .into_iter()
            .find_map(|pointer| body.string_at(pointer));
        let created = version.as_deref().and_then(envelope::rfc3339_seconds);
        let version = match version {
            Some(version) => version,
            // Verified already, so the timestamp header is there.
            None => unix_timestamp(request.headers, TIMESTAMP)?.text.to_owned(),
        };
        let event = Envelope::with_id(format!("{trigger}:{object}:{version}"))?
            .event_type(Some(trigger))
            .object_id(Some(object))
            .created_at(created);
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let millis = outgoing.now.saturating_mul(1000).to_string();
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(TIMESTAMP, millis.as_str())
            .header(
                SIGNATURE.name,
                SIGNATURE.sign_hmac(secret, &[format!("{millis}:").as_bytes(), outgoing.body]),
            ))
    }
}

/// The `x-webflow-signature` value for `body` sent at `millis`. Used by tests.
pub fn sign(secret: &str, millis: i64, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(secret.as_bytes(), &[format!("{millis}:").as_bytes(), body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "fixtureWebflowClientSecret0000000000000000000000001";
    const NOW: i64 = 1_700_000_000;
    const FORM: &[u8] = br#"{"triggerType":"form_submission","payload":{"name":"Contact Us","siteId":"65427cf400e02b306eaa049c","data":{"email":"zaphod@heartofgold.ai"},"submittedAt":"2023-11-14T22:13:10.000Z","id":"6321ca84df3949bfc6752327","formId":"65429eadebe8a9f3a30f62d0"}}"#;
    const ITEM: &[u8] = br#"{"triggerType":"collection_item_changed","payload":{"id":"580e64008c9a982ac9b8b754","siteId":"580e63e98c9a982ac9b8b741","collectionId":"580e63fc8c9a982ac9b8b745","lastUpdated":"2023-11-14T22:13:15.000Z","isDraft":false}}"#;
    const SITE: &[u8] = br#"{"triggerType":"site_publish","payload":{"site":"62749158efef318abc8d5a0f","domains":["example.webflow.io"],"publishedBy":{"displayName":"Ada"}}}"#;

    fn verify(millis: i64, signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Webflow), SECRET);
        let millis = millis.to_string();
        let headers: Headers = [(SIGNATURE.name, signature), (TIMESTAMP, millis.as_str())]
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, NOW)
    }

    fn event_of(body: &[u8]) -> crate::Envelope {
        let millis = NOW * 1000 + 250;
        verify(millis, &sign(SECRET, millis, body), body)
            .unwrap()
            .event()
            .unwrap()
            .clone()
    }

    #[test]
    fn ids_name_the_trigger_the_object_and_its_version() {
        let form = event_of(FORM);
        assert_eq!(
            form.event_id,
            "form_submission:6321ca84df3949bfc6752327:2023-11-14T22:13:10.000Z"
        );
        assert_eq!(form.event_type.as_deref(), Some("form_submission"));
        assert_eq!(form.created_at, Some(NOW - 10));
        let item = event_of(ITEM);
        assert_eq!(
            item.event_id,
            "collection_item_changed:580e64008c9a982ac9b8b754:2023-11-14T22:13:15.000Z"
        );
        assert_eq!(item.object_id.as_deref(), Some("580e64008c9a982ac9b8b754"));
        // No time of its own: the signed request timestamp.
        let site = event_of(SITE);
        assert_eq!(
            site.event_id,
            format!("site_publish:62749158efef318abc8d5a0f:{}", NOW * 1000 + 250)
        );
        assert_eq!(site.created_at, None);
    }

    #[test]
    fn window_both_directions_in_milliseconds() {
        test_support::assert_window(NOW, 300, |t| {
            verify(t * 1000, &sign(SECRET, t * 1000, FORM), FORM)
        });
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, NOW * 1000, FORM);
        let mut tampered = FORM.to_vec();
        tampered[20] ^= 1;
        assert_eq!(
            verify(NOW * 1000, &good, &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(NOW * 1000, &sign("other", NOW * 1000, FORM), FORM).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(NOW * 1000 + 1, &good, FORM).unwrap_err(),
            Reason::Signature
        );
        // Seconds where Webflow writes milliseconds: far in the past.
        assert_eq!(
            verify(NOW, &sign(SECRET, NOW, FORM), FORM).unwrap_err(),
            Reason::Timestamp
        );
        assert_eq!(
            verify(NOW * 1000, "", FORM).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(NOW * 1000, "abc", FORM).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_object = br#"{"triggerType":"form_submission","payload":{}}"#;
        assert_eq!(
            verify(NOW * 1000, &sign(SECRET, NOW * 1000, no_object), no_object).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            name in any::<String>(),
            secret in "[A-Za-z0-9]{1,60}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "triggerType": "form_submission", "payload": {"id": "f1", "name": name}
            }))
            .unwrap();
            let signed = Signed::in_header(
                Box::new(Webflow), &secret, SIGNATURE, &sign(&secret, NOW * 1000, &body),
                &[(TIMESTAMP, "1700000000000")],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
