//! `buildkite` — Buildkite Pipelines and Package Registries webhooks
//! (`X-Buildkite-Signature`).
//!
//! Follows Buildkite's "Webhooks" API page (buildkite.com/docs/apis/webhooks,
//! "HTTP headers") and "Pipelines webhooks"; Buildkite publishes no SDK that
//! verifies.
//!
//! - Header: `X-Buildkite-Signature: timestamp=<unix seconds>,signature=<hex>`.
//!   Signed bytes: `"{timestamp}.{raw body}"`, HMAC-SHA256 keyed with the
//!   webhook's **Token** exactly as the notification service shows it, as
//!   UTF-8 bytes.
//! - Buildkite's other mode sends that token itself in `X-Buildkite-Token`:
//!   it signs nothing, has no timestamp and puts the secret on the wire in
//!   every request. hookinbox accepts the signature mode only; a request
//!   with the token header alone is `missing_signature`, and the refusal
//!   says to switch the webhook to `X-Buildkite-Signature`.
//! - Tolerance: Buildkite documents none; 300 s in both directions, the
//!   window of the same scheme elsewhere.
//! - Event id: Buildkite sends none. The id is composed of signed body
//!   values: `"{event}:{subject}"`, the subject being the `job.id`,
//!   `build.id`, `agent.id` or `package.id` the event is about (in that
//!   order: a job event carries its build too). Each of those is created
//!   once per object and each event name happens once per object
//!   (`build.running`, `build.finished`, …). An event about none of them
//!   (`ping`, `cluster_token.registration_blocked`) is
//!   `"{event}@{timestamp}"`, one delivery. A natural key, not a hash.
//! - Type: body `event` (the unsigned `X-Buildkite-Event` header says the
//!   same and is not read). Object id: the subject. No object version.
//! - Redelivery window: the pages followed here describe no retries; 24
//!   hours are kept, an assumption to revisit when Buildkite documents them.

use crate::dotted_timestamp::TimestampUnit;
use crate::envelope::{Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureList, VectorSource,
};

const SIGNATURE: SignatureList<'static> = SignatureList {
    name: "X-Buildkite-Signature",
    separator: ',',
    timestamp_key: "timestamp",
    signature_key: "signature",
    algorithm: Algorithm::HmacSha256,
};

/// The header of Buildkite's unsigned token mode, named in its refusal.
const TOKEN_HEADER: &str = "X-Buildkite-Token";

/// Where the object an event is about is named, most specific first.
const SUBJECTS: [&str; 4] = ["/job/id", "/build/id", "/agent/id", "/package/id"];

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Buildkite",
    docs_url: "https://buildkite.com/docs/apis/webhooks",
    scheme:
        "HMAC-SHA256, hex, `X-Buildkite-Signature: timestamp=…,signature=…` (token mode refused)",
    signed_parts: "`{timestamp}.{body}`",
    id_source: "`{event}:{job, build, agent or package id}`, else `{event}@{timestamp}` (signed)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/provb_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Buildkite;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Buildkite))
}

impl Adapter for Buildkite {
    fn name(&self) -> &'static str {
        "buildkite"
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

    /// HMAC over the timestamp and the body; the id is composed of the
    /// signed `event`, a signed object id or the signed timestamp.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        if request.headers.get_nonempty(SIGNATURE.name).is_none()
            && request.headers.get_nonempty(TOKEN_HEADER).is_some()
        {
            return Err(Refusal::missing_signature(
                "X-Buildkite-Token without X-Buildkite-Signature: set the webhook's token to be sent as a signature",
            ));
        }
        SIGNATURE.dotted_timestamp_claim(request, TimestampUnit::Seconds)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(
            request.body,
            &["/event", "/job/id", "/build/id", "/agent/id", "/package/id"],
        )?;
        let event = body
            .string_at("/event")
            .ok_or_else(|| Refusal::missing_event_id("no `event` in the body"))?;
        let subject = SUBJECTS
            .into_iter()
            .find_map(|pointer| body.string_at(pointer));
        let id = match &subject {
            Some(subject) => format!("{event}:{subject}"),
            None => {
                // The claim read it already; it verified, so it is there.
                let timestamp = SIGNATURE
                    .read(request.headers)?
                    .timestamps
                    .first()
                    .copied()
                    .ok_or_else(|| Refusal::missing_event_id("no signed timestamp"))?;
                format!("{event}@{timestamp}")
            }
        };
        let envelope = Envelope::with_id(id)?
            .event_type(Some(event))
            .object_id(subject);
        Ok(Outcome::Event(envelope))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        Ok(crate::signer::SignedRequest::json(outgoing.body).header(
            SIGNATURE.name,
            SIGNATURE.dotted_timestamp_header(secret, outgoing.now, outgoing.body, ","),
        ))
    }
}

/// The `X-Buildkite-Signature` value Buildkite sends for `body` at
/// `timestamp`. Used by tests.
pub fn sign(token: &str, timestamp: i64, body: &[u8]) -> String {
    SIGNATURE.dotted_timestamp_header(token.as_bytes(), timestamp, body, ",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, SignatureHeader, Verified};
    use proptest::prelude::*;

    const TOKEN: &str = "309c9c842d8565adec5d7469160059f9";
    const NOW: i64 = 1_700_000_000;
    const BUILD: &[u8] = br#"{"event":"build.finished","build":{"id":"f62a1b4d-10f9-4790-bc1c-e2c3a0c80983","number":42,"state":"passed","created_at":"2023-11-14 22:10:00 UTC"},"pipeline":{"slug":"app"},"sender":{"id":"8a7693f8","name":"Ada"}}"#;
    const JOB: &[u8] = br#"{"event":"job.finished","job":{"id":"0185f2b8-0f0b-4b4a-9f1a-7f8d6b2c1e44","state":"passed"},"build":{"id":"f62a1b4d-10f9-4790-bc1c-e2c3a0c80983"},"pipeline":{"slug":"app"}}"#;
    const PING: &[u8] = br#"{"event":"ping","service":{"id":"c9f8372d","provider":"webhook"},"organization":{"slug":"acme"},"sender":{"id":"8a7693f8"}}"#;

    fn verify_with(pairs: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Buildkite), TOKEN);
        let headers: Headers = pairs.iter().copied().collect();
        test_support::verify(&verifier, &headers, body, NOW)
    }

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        verify_with(&[(SIGNATURE.name, header)], body)
    }

    fn id_of(body: &[u8]) -> (String, Option<String>) {
        let verified = verify(&sign(TOKEN, NOW, body), body).unwrap();
        let event = verified.event().unwrap();
        (event.event_id.clone(), event.object_id.clone())
    }

    #[test]
    fn ids_name_the_event_and_its_subject() {
        let build = "f62a1b4d-10f9-4790-bc1c-e2c3a0c80983";
        assert_eq!(
            id_of(BUILD),
            (format!("build.finished:{build}"), Some(build.to_owned()))
        );
        let job = "0185f2b8-0f0b-4b4a-9f1a-7f8d6b2c1e44";
        assert_eq!(
            id_of(JOB),
            (format!("job.finished:{job}"), Some(job.to_owned()))
        );
        assert_eq!(id_of(PING), (format!("ping@{NOW}"), None));
        let verified = verify(&sign(TOKEN, NOW, BUILD), BUILD).unwrap();
        assert_eq!(
            verified.event().unwrap().event_type.as_deref(),
            Some("build.finished")
        );
    }

    #[test]
    fn window_both_directions() {
        test_support::assert_window(NOW, 300, |t| verify(&sign(TOKEN, t, BUILD), BUILD));
    }

    #[test]
    fn refusals() {
        let good = sign(TOKEN, NOW, BUILD);
        let mut tampered = BUILD.to_vec();
        tampered[30] ^= 1;
        assert_eq!(verify(&good, &tampered).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(&sign("other", NOW, BUILD), BUILD).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify("", BUILD).unwrap_err(), Reason::MissingSignature);
        // The unsigned token mode is refused even with the right token.
        assert_eq!(
            verify_with(&[(TOKEN_HEADER, TOKEN)], BUILD).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(&format!("signature={}", "0".repeat(64)), BUILD).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_event = br#"{"build":{"id":"b1"}}"#;
        assert_eq!(
            verify(&sign(TOKEN, NOW, no_event), no_event).unwrap_err(),
            Reason::MissingEventId
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            state in any::<String>(),
            token in "[a-z0-9]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let body = serde_json::to_vec(&serde_json::json!({
                "event": "build.running", "build": {"id": "b1", "state": state}
            }))
            .unwrap();
            const SIG: SignatureHeader<'static> =
                SignatureHeader::hex("X-Buildkite-Signature", Algorithm::HmacSha256)
                    .with_prefix("timestamp=1700000000,signature=");
            let signed =
                Signed::in_header(Box::new(Buildkite), &token, SIG, &sign(&token, NOW, &body), &[]);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
