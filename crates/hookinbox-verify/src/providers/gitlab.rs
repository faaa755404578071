//! `gitlab` — GitLab webhooks authenticated by their secret token.
//!
//! Follows GitLab's "Webhooks" documentation (docs.gitlab.com/user/project/
//! integrations/webhooks, "Delivery headers" and "Secret token").
//!
//! - Header: `X-Gitlab-Token` carries the webhook's secret token as is.
//!   GitLab signs nothing in this mode: the token proves the sender knows the
//!   secret, but does not bind the body, so TLS is what protects the body in
//!   transit. (GitLab's newer signing-token mode is a Standard Webhooks
//!   signature and belongs to that adapter.)
//! - Signed bytes: none. The token is compared with every configured secret
//!   version in constant time (SHA-256 digests compared, so the time does not
//!   reveal the token's length), as `Key::Token` / `Algorithm::Token`.
//! - Tolerance: none. GitLab sends no timestamp.
//! - Event id: header `Idempotency-Key`, documented as "consistent across
//!   webhook retries" (GitLab 17.4+), including resends from the webhook's
//!   "Recent events". Fallback for older GitLab: `X-Gitlab-Event-UUID`, which
//!   is per triggering event but *shared by recursive webhooks* (webhooks
//!   fired by earlier webhooks); it is only used when `Idempotency-Key` is
//!   absent. No id at all: `missing_event_id`. Neither header is protected by
//!   anything: whoever holds one captured request holds the token too.
//! - Type: header `X-Gitlab-Event` (`Push Hook`), else body `object_kind`.
//!   GitLab gives no object version; no object id is claimed.
//! - Redelivery window: GitLab does not retry failed deliveries on its own
//!   (failing hooks are disabled, temporarily for 5xx); a logged request can be
//!   resent by hand or through the API with the same `Idempotency-Key` while
//!   its log is kept. We assume 7 days.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Candidate, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

#[derive(Debug, Default)]
pub struct Gitlab;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Gitlab))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "GitLab",
    docs_url: "https://docs.gitlab.com/user/project/integrations/webhooks/",
    scheme: "secret token sent as is in `X-Gitlab-Token` (no signature)",
    signed_parts: "nothing: the token authenticates the request",
    id_source: "header `Idempotency-Key`, else `X-Gitlab-Event-UUID`",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Gitlab {
    fn name(&self) -> &'static str {
        "gitlab"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        7 * 24 * 3600
    }

    /// Nothing is signed: a shared token authenticates the request, and the id and
    /// type come from headers (or the body) that nothing binds to it.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Token,
            event_id: false,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        // GitLab strips line breaks from the token it sends; surrounding
        // whitespace in a configured secret is never part of it.
        Key::token_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let token = request
            .headers
            .get_nonempty("x-gitlab-token")
            .ok_or_else(|| Refusal::missing_signature("no X-Gitlab-Token header"))?;
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new(),
            candidates: vec![Candidate::new(Algorithm::Token, token.as_bytes().to_vec())],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let headers = request.headers;
        let body = envelope::json(request.body)?;
        let id = headers
            .get_nonempty("idempotency-key")
            .or_else(|| headers.get_nonempty("x-gitlab-event-uuid"))
            .ok_or_else(|| {
                Refusal::missing_event_id("neither Idempotency-Key nor X-Gitlab-Event-UUID")
            })?;
        let event_type = headers
            .get_nonempty("x-gitlab-event")
            .map(str::to_owned)
            .or_else(|| envelope::string_at(&body, "/object_kind"));
        Ok(Outcome::Event(
            Envelope::with_id(id)?.event_type(event_type),
        ))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(crate::signer::token("X-Gitlab-Token", &key, outgoing)?
            .header("X-Gitlab-Event-UUID", outgoing.event_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const TOKEN: &str = "glwt-secret";
    const BODY: &[u8] = br#"{"object_kind":"push","ref":"refs/heads/main"}"#;

    fn verify(headers: &[(&str, &str)], body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Gitlab), TOKEN);
        let headers: Headers = headers.iter().copied().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn idempotency_key_is_preferred() {
        let verified = verify(
            &[
                ("X-Gitlab-Token", TOKEN),
                ("X-Gitlab-Event", "Push Hook"),
                ("X-Gitlab-Event-UUID", "uuid-1"),
                ("Idempotency-Key", "idem-1"),
            ],
            BODY,
        )
        .unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "idem-1");
        assert_eq!(event.event_type.as_deref(), Some("Push Hook"));
    }

    #[test]
    fn event_uuid_and_object_kind_are_fallbacks() {
        let verified = verify(
            &[("X-Gitlab-Token", TOKEN), ("X-Gitlab-Event-UUID", "uuid-1")],
            BODY,
        )
        .unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "uuid-1");
        assert_eq!(event.event_type.as_deref(), Some("push"));
        assert_eq!(
            verify(&[("X-Gitlab-Token", TOKEN)], BODY).unwrap_err(),
            Reason::MissingEventId
        );
    }

    #[test]
    fn refusals() {
        let id = ("Idempotency-Key", "idem-1");
        for wrong in ["glwt-secretx", "glwt-secre", "GLWT-SECRET", "x"] {
            assert_eq!(
                verify(&[("X-Gitlab-Token", wrong), id], BODY).unwrap_err(),
                Reason::Signature,
                "{wrong}"
            );
        }
        assert_eq!(verify(&[id], BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(&[("X-Gitlab-Token", "  "), id], BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(&[("X-Gitlab-Token", TOKEN), id], b"<xml/>").unwrap_err(),
            Reason::MalformedBody
        );
    }

    #[test]
    fn a_rotated_token_is_still_trusted_during_the_overlap() {
        let verifier =
            test_support::verifier_with(Box::new(Gitlab), &[("new", "new-token"), ("old", TOKEN)]);
        let headers: Headers = [("X-Gitlab-Token", TOKEN), ("Idempotency-Key", "i")]
            .into_iter()
            .collect();
        let verified = verifier.verify(&Request::new(&headers, BODY), 0).unwrap();
        assert_eq!(verified.matched_secret_version(), "old");
    }

    fn accepted(token: &str, body: &[u8], secret: &str) -> bool {
        let key = Gitlab.parse_key(secret).unwrap();
        let headers: Headers = [("X-Gitlab-Token", token)].into_iter().collect();
        Gitlab
            .claim(&Request::new(&headers, body))
            .is_ok_and(|claim| claim.is_signed_by(&key))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        // A shared token signs no bytes: the body never matters, and any
        // single-byte change to the token is refused.
        #[test]
        fn the_exact_token_is_accepted_and_single_byte_changes_are_not(
            body in proptest::collection::vec(any::<u8>(), 0..256),
            secret in "[!-~]{1,40}",
            at in any::<prop::sample::Index>(),
            replacement in "[!-~]",
        ) {
            prop_assert!(accepted(&secret, &body, &secret));
            let mut changed: Vec<char> = secret.chars().collect();
            let i = at.index(changed.len());
            let new = replacement.chars().next().unwrap();
            prop_assume!(changed[i] != new);
            changed[i] = new;
            let changed: String = changed.into_iter().collect();
            prop_assert!(!accepted(&changed, &body, &secret));
        }
    }
}
