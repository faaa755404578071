//! `notion` — Notion integration webhooks (`X-Notion-Signature`).
//!
//! Follows Notion's "Webhooks" reference (developers.notion.com/reference/
//! webhooks: "Creating a webhook subscription", "Validating event payloads").
//!
//! - Handover: when a subscription is created, Notion POSTs
//!   `{"verification_token": "secret_…"}` to the URL, **unsigned**, and the
//!   user must paste that token back into the integration's settings to
//!   verify the subscription. The token is then the signing key. The adapter
//!   takes it only when the subscription's URL carries the endpoint's
//!   `verify_token` as `?handshake=…` (see [`crate::handover`]), else
//!   `missing_signature`/`signature` (401) and nothing is kept. The service
//!   keeps it sealed and shows it to the operator only
//!   (`hookinbox endpoints handshake`), never in a log. The answer is `200`.
//! - Header of events: `X-Notion-Signature: sha256=<hex>`, the HMAC-SHA256
//!   of the raw body keyed with the verification token as UTF-8 bytes.
//! - Tolerance: none. Notion signs no timestamp (`timestamp` is metadata).
//! - Event id: body `id`, the event's id, which a retry repeats; signed.
//! - Type: `type` (`page.content_updated`). Object id: `entity.id`.
//!   Created: `timestamp` (RFC 3339). No object version.
//! - Batches: none; aggregated events (`page.content_updated`) are one event
//!   with the ids of the changed blocks in `data`.
//! - Redelivery window: Notion retries a failed delivery with exponential
//!   backoff, up to 8 attempts over about a day. Two days are kept.

use crate::envelope::JsonFields;
use crate::handover::{Handover, HandshakeToken};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Reply, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, VectorSource,
};

/// `sha256=` and the hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Notion-Signature", Algorithm::HmacSha256)
        .with_prefix("sha256=")
        .with_length(32);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Notion",
    docs_url: "https://developers.notion.com/reference/webhooks",
    scheme: "HMAC-SHA256 (the verification token), hex, `X-Notion-Signature: sha256=`",
    signed_parts: "raw body",
    id_source: "body `id` (signed)",
    handshake: Some(
        "unsigned `{\"verification_token\"}` POST to `?handshake=<verify_token>`: kept sealed, shown by `hookinbox endpoints handshake`",
    ),
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/handshake_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug)]
pub struct Notion {
    /// The endpoint's `verify_token`, which a handover's URL carries.
    token: HandshakeToken,
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Notion {
        token: HandshakeToken::from_settings(settings, "notion")?,
    }))
}

impl Adapter for Notion {
    fn name(&self) -> &'static str {
        "notion"
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

    /// HMAC over the body, which holds the id and the type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(request.body, &["/id", "/type", "/entity/id", "/timestamp"])?;
        let event = body
            .required_id_at("/id")?
            .event_type(body.string_at("/type"))
            .object_id(body.string_at("/entity/id"))
            .created_at(body.rfc3339_at("/timestamp"));
        Ok(Outcome::Event(event))
    }

    fn handover(&self, request: &Request<'_>) -> Option<Result<Handover, Refusal>> {
        if request.headers.get(SIGNATURE.name).is_some() {
            return None;
        }
        let body = JsonFields::read(request.body, &["/verification_token"]).ok()?;
        let token = body.string_at("/verification_token")?;
        Some(
            self.token
                .hand_over(request.query, &token, Reply::text(Vec::new()), None),
        )
    }

    fn learns_secrets(&self) -> bool {
        true
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

/// Signs a body the way Notion does, with the verification token. Used by
/// tests and load generators.
pub fn sign(verification_token: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(verification_token.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{ExposeSecret, Headers, Reason, Verified};
    use proptest::prelude::*;

    const TOKEN: &str = "secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl";
    const BODY: &[u8] = br#"{"id":"367cba44-b6f3-4c92-81e7-6a2e9659efd4","timestamp":"2026-01-01T00:00:00.285Z","workspace_id":"13950b26-c203-4f3b-b97d-93ec06319565","subscription_id":"29d75c0d-5546-4414-8459-7b7a92f1fc4b","integration_id":"104d872b-594c-8070-9b23-0037a3e8c1e5","type":"page.created","authors":[{"id":"c7c11cca-1d73-471d-9b6e-bdef51470190","type":"person"}],"attempt_number":1,"entity":{"id":"153104cd-477e-809d-8dc4-ff2d96ae3090","type":"page"},"data":{"parent":{"id":"13950b26-c203-4f3b-b97d-93ec06319565","type":"space"}}}"#;

    const HANDSHAKE_TOKEN: &str = "notion-handshake-token";
    const URL: Option<&str> = Some("handshake=notion-handshake-token");

    fn notion() -> Box<dyn Adapter> {
        build(&AdapterSettings {
            verify_token: Some(HANDSHAKE_TOKEN.into()),
            ..AdapterSettings::default()
        })
        .unwrap()
    }

    fn verify(header: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(notion(), TOKEN);
        let headers: Headers = header
            .map(|value| ("X-Notion-Signature", value))
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    fn handover_at(
        query: Option<&str>,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Option<Result<Handover, Reason>> {
        let headers: Headers = headers.iter().copied().collect();
        notion()
            .handover(&Request::new(&headers, body).with_query(query))
            .map(|result| result.map_err(|refusal| refusal.reason))
    }

    fn handover(headers: &[(&str, &str)], body: &[u8]) -> Option<Result<Handover, Reason>> {
        handover_at(URL, headers, body)
    }

    #[test]
    fn valid_event_reads_the_envelope() {
        let verified = verify(Some(&sign(TOKEN, BODY)), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "367cba44-b6f3-4c92-81e7-6a2e9659efd4");
        assert_eq!(event.event_type.as_deref(), Some("page.created"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("153104cd-477e-809d-8dc4-ff2d96ae3090")
        );
        assert_eq!(event.created_at, Some(1_767_225_600));
    }

    #[test]
    fn refusals() {
        let good = sign(TOKEN, BODY);
        let mut tampered = BODY.to_vec();
        tampered[12] ^= 1;
        assert_eq!(
            verify(Some(&good), &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(Some(&sign("secret_other", BODY)), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(Some(&good.replace("sha256=", "")), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_id = br#"{"type":"page.created"}"#;
        assert_eq!(
            verify(Some(&sign(TOKEN, no_id)), no_id).unwrap_err(),
            Reason::MissingEventId
        );
    }

    #[test]
    fn the_verification_post_is_a_handover() {
        let body = format!(r#"{{"verification_token":"{TOKEN}"}}"#);
        let handover = handover(&[], body.as_bytes()).unwrap().unwrap();
        assert_eq!(handover.secret.expose_secret(), TOKEN);
        assert_eq!(handover.reply.status, 200);
        assert_eq!(handover.echo_header, None);
        // A signed request, an event, or not JSON: not a handover.
        assert!(handover_is_none(
            &[("X-Notion-Signature", "sha256=00")],
            &body
        ));
        assert!(handover_is_none(&[], std::str::from_utf8(BODY).unwrap()));
        assert!(handover_is_none(&[], "not json"));
        assert_eq!(
            super::tests::handover(&[], br#"{"verification_token":"a b"}"#)
                .unwrap()
                .unwrap_err(),
            Reason::MalformedSignature
        );
        // Only at the URL with the endpoint's handshake token.
        let refused = |query| {
            handover_at(query, &[], body.as_bytes())
                .unwrap()
                .unwrap_err()
        };
        assert_eq!(refused(None), Reason::MissingSignature);
        assert_eq!(refused(Some("handshake=guess")), Reason::Signature);
    }

    fn handover_is_none(headers: &[(&str, &str)], body: &str) -> bool {
        handover(headers, body.as_bytes()).is_none()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in prop::collection::vec(any::<u8>(), 1..256),
            secret in "[A-Za-z0-9_]{1,48}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = Signed::in_header(notion(), &secret, SIGNATURE, &sign(&secret, &body), &[]);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }

        #[test]
        fn any_body_is_recognised_or_not_without_panicking(body in prop::collection::vec(any::<u8>(), 0..256)) {
            let _ = handover(&[], &body);
        }
    }
}
