//! `recharge` — Recharge (subscription payments) webhooks
//! (`X-Recharge-Hmac-Sha256`).
//!
//! Follows Recharge's "Using webhooks" page
//! (docs.getrecharge.com/docs/webhooks-overview, "Validating webhooks").
//!
//! - Header: `X-Recharge-Hmac-Sha256`, the hex **SHA-256 of the API client
//!   secret followed by the raw body** — despite its name not an HMAC, so a
//!   scheme of its own ([`Algorithm::SecretPrefixedSha256`]).
//! - Secret: the client secret of the Recharge API token as the merchant
//!   portal shows it, as UTF-8 bytes.
//! - Tolerance: none. Recharge signs no timestamp.
//! - Event id: Recharge sends none; a webhook's body is the resource it
//!   reports (`{"subscription": {…}}`), exactly as the REST API returns it.
//!   The id is composed of signed values a retry re-sends unchanged:
//!   `"{resource}:{id}@{updated_at}"` (`subscription:27364865@2023-11-14T22:13:20`),
//!   or `"{resource}:{id}"` when the resource has no `updated_at` (a
//!   deletion). A body without exactly one object member, or whose object
//!   has no `id`: `missing_event_id`.
//! - Type: the `X-Recharge-Topic` header (`subscription/created`).
//!   **Unsigned**, declared so. Two topics fired by one change send the same
//!   body under the same id; hookinbox keeps the first. Object id: the
//!   resource's `id`. Created: `updated_at` when it is RFC 3339 (Recharge
//!   writes most times without a zone, which are not read). No object
//!   version.
//! - Redelivery window: Recharge retries a failed webhook 20 times over 48
//!   hours, then deletes it; two days are kept.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, ProviderFacts, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, VectorSource,
};

/// Hex SHA-256 of the client secret and the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Recharge-Hmac-Sha256", Algorithm::SecretPrefixedSha256).with_length(32);

/// The webhook's topic; not signed.
const TOPIC: &str = "X-Recharge-Topic";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Recharge",
    docs_url: "https://docs.getrecharge.com/docs/webhooks-overview",
    scheme: "SHA-256 of client secret + body (not an HMAC), hex, `X-Recharge-Hmac-Sha256`",
    signed_parts: "client secret, then raw body",
    id_source: "`{resource}:{id}@{updated_at}` from the body (the type, header `X-Recharge-Topic`, is not signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/ops_commerce_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Recharge;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Recharge))
}

impl Adapter for Recharge {
    fn name(&self) -> &'static str {
        "recharge"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        2 * 24 * 3600
    }

    /// The hash covers the body, from which the id is composed; the topic
    /// (the type) is an unsigned header.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: true,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        // The resource's name is the key of the body's one object member,
        // so the body's structure is needed, not a fixed pointer.
        let body = envelope::json(request.body)?;
        let mut resources = body
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, value)| value.is_object());
        let (Some((resource, object)), None) = (resources.next(), resources.next()) else {
            return Err(Refusal::missing_event_id(
                "the body is not one resource object",
            ));
        };
        let object_id = envelope::string_at(object, "/id").ok_or_else(|| {
            Refusal::missing_event_id(format!("no `id` in the `{resource}` resource"))
        })?;
        let updated = envelope::string_at(object, "/updated_at");
        let id = match &updated {
            Some(updated) => format!("{resource}:{object_id}@{updated}"),
            None => format!("{resource}:{object_id}"),
        };
        let event = Envelope::with_id(id)?
            .event_type(request.headers.get_nonempty(TOPIC).map(str::to_owned))
            .object_id(Some(object_id))
            .created_at(updated.as_deref().and_then(envelope::rfc3339_seconds));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        crate::signer::body_hmac(&SIGNATURE, &key, outgoing)
    }
}

/// The `X-Recharge-Hmac-Sha256` value Recharge sends for `body`. For tests
/// and examples.
pub fn sign(client_secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(client_secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;
    use sha2::Digest;

    const SECRET: &str = "recharge-client-secret-0123";
    const BODY: &[u8] = br#"{"subscription":{"id":27364865,"address_id":69282975,"customer_id":64962858,"created_at":"2023-11-14T17:13:20","updated_at":"2023-11-14T22:13:20+00:00","next_charge_scheduled_at":"2023-12-14","status":"active","product_title":"Coffee","quantity":1}}"#;

    fn verify(signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let headers: Headers = [
            ("X-Recharge-Hmac-Sha256", signature),
            (TOPIC, "subscription/created"),
        ]
        .into_iter()
        .collect();
        let verifier = test_support::verifier(Box::new(Recharge), SECRET);
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn the_signature_is_a_plain_sha256_of_secret_and_body() {
        let expected = hex::encode(sha2::Sha256::digest([SECRET.as_bytes(), BODY].concat()));
        assert_eq!(sign(SECRET, BODY), expected);
        // An HMAC under the same secret is not Recharge's signature.
        let hmac = hex::encode(crate::signature::hmac_sha256(SECRET.as_bytes(), &[BODY]));
        assert_eq!(verify(&hmac, BODY).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn valid_request_composes_the_id() {
        let verified = verify(&sign(SECRET, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "subscription:27364865@2023-11-14T22:13:20+00:00"
        );
        assert_eq!(event.event_type.as_deref(), Some("subscription/created"));
        assert_eq!(event.object_id.as_deref(), Some("27364865"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        let unsigned = verified.unsigned_metadata();
        assert!(!unsigned.event_id);
        assert!(unsigned.event_type);
        let deleted = br#"{"subscription":{"id":27364865}}"#;
        let verified = verify(&sign(SECRET, deleted), deleted).unwrap();
        assert_eq!(verified.event().unwrap().event_id, "subscription:27364865");
    }

    #[test]
    fn refusals() {
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            verify(&sign(SECRET, BODY), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&sign("other", BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(verify("abc", BODY).unwrap_err(), Reason::MalformedSignature);
        for body in [
            &b"[1,2]"[..],
            br#"{"subscription":{"status":"active"}}"#,
            br#"{"ok":true}"#,
        ] {
            assert_eq!(
                verify(&sign(SECRET, body), body).unwrap_err(),
                Reason::MissingEventId
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            title in any::<String>(),
            secret in "[A-Za-z0-9_]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "charge": {"id": 1, "updated_at": "2023-11-14T22:13:20", "title": title}
            }))
            .unwrap();
            let signed = Signed::in_header(Box::new(Recharge), &secret, SIGNATURE, &sign(&secret, &body), &[(TOPIC, "charge/paid")]);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
