//! `netlify` — Netlify deploy notifications (outgoing webhooks) with a JWS
//! secret token (`X-Webhook-Signature`).
//!
//! Follows Netlify's "Deploy notifications" page (docs.netlify.com/site-deploys/
//! deploy-notifications, "Payload signature").
//!
//! - Header: `X-Webhook-Signature` = a compact JWS signed with HS256 (read
//!   by [`crate::compact_jws`]: the algorithm is pinned, `alg: none` and
//!   every other algorithm refused), keyed with the "JWS secret token" typed
//!   into the notification's settings, as UTF-8 bytes.
//! - Signed bytes: the JWS's `header.claims`. The claims are `iss` =
//!   `netlify` and `sha256` = the hex SHA-256 of the raw body, which binds the
//!   body: a body whose digest is not the claim's is refused as `signature`
//!   (a public digest, so a plain comparison), as is a token of another
//!   issuer.
//! - Tolerance: none. Netlify's token carries no time.
//! - Event id: **Netlify sends none.** The body is the deploy; one deploy
//!   produces several notifications (started, succeeded, locked, …), each
//!   with the deploy's `state` and its `updated_at` at that moment. The id
//!   is composed of those signed values, `"{id}:{state}:{updated_at}"`
//!   (`"{id}:{state}"` without `updated_at`): a retry re-sends the same
//!   body, a later notification of the same deploy differs. A natural key,
//!   not a hash. A body without `id` or `state` is `missing_event_id`.
//! - Type: `state` (`building`, `ready`, `error`, …): Netlify names the
//!   event only by which notification URL it posts to. Object id: `id` (the
//!   deploy). Created: `updated_at` (RFC 3339). No object version.
//! - Redelivery window: the page followed here states no retry span; 24
//!   hours are kept, an assumption to revisit when Netlify documents one.

use sha2::Digest;

use crate::compact_jws::CompactJws;
use crate::envelope::{Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    Adapter, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, VectorSource,
};

/// The header carrying the JWS.
const SIGNATURE: &str = "X-Webhook-Signature";

/// The issuer Netlify writes into every token.
const ISSUER: &str = "netlify";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Netlify",
    docs_url: "https://docs.netlify.com/site-deploys/deploy-notifications/#payload-signature",
    scheme: "JWS (HS256, pinned), `X-Webhook-Signature`",
    signed_parts: "JWS claims `iss` = `netlify` and `sha256` = hex SHA-256 of the raw body",
    id_source: "`{id}:{state}:{updated_at}` of the deploy",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/provc_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Netlify;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Netlify))
}

impl Adapter for Netlify {
    fn name(&self) -> &'static str {
        "netlify"
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

    /// The token's `sha256` claim binds the body, from which the id and the
    /// state are read.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let jws = CompactJws::read_hs256(required(request.headers, SIGNATURE)?, SIGNATURE)?;
        if jws.string_claim("iss") != Some(ISSUER) {
            return Err(Refusal::signature("the token's issuer is not `netlify`"));
        }
        let claimed = jws
            .string_claim("sha256")
            .ok_or_else(|| Refusal::malformed_signature("the token has no `sha256` claim"))?;
        if !claimed.eq_ignore_ascii_case(&body_digest(request.body)) {
            return Err(Refusal::signature(
                "the body's SHA-256 is not the token's `sha256` claim",
            ));
        }
        Ok(jws.into_claim(None))
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(request.body, &["/id", "/state", "/updated_at"])?;
        let (Some(id), Some(state)) = (body.string_at("/id"), body.string_at("/state")) else {
            return Err(Refusal::missing_event_id(
                "no deploy `id` and `state` to name the notification",
            ));
        };
        let event_id = match body.string_at("/updated_at") {
            Some(updated_at) => format!("{id}:{state}:{updated_at}"),
            None => format!("{id}:{state}"),
        };
        let event = Envelope::with_id(event_id)?
            .event_type(Some(state))
            .object_id(Some(id))
            .created_at(body.rfc3339_at("/updated_at"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        Ok(crate::signer::SignedRequest::json(outgoing.body).header(
            SIGNATURE,
            sign(crate::signer::shared_secret(&key)?, outgoing.body),
        ))
    }
}

/// Hex SHA-256 of the body, as Netlify writes its `sha256` claim.
fn body_digest(body: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(body))
}

/// The token Netlify sends for `body`: claims `iss`, then `sha256`. Used by
/// the signer, tests and load generators.
#[cfg(feature = "sign")]
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut claims = serde_json::Map::new();
    claims.insert("iss".into(), ISSUER.into());
    claims.insert("sha256".into(), body_digest(body).into());
    crate::compact_jws::sign_hs256(secret, &claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "netlify-jws-secret-token";
    const BODY: &[u8] = br#"{"id":"6571f0c2e4b0aa0008a1b2c3","site_id":"fa4dd95a-994e-4f89-8a7a-2d9e9fc36a32","build_id":"6571f0c2e4b0aa0008a1b2c1","state":"ready","name":"docs-site","url":"https://docs.example.com","created_at":"2023-11-14T22:10:00.000Z","updated_at":"2023-11-14T22:13:20.000Z","branch":"main","context":"production","deploy_time":159}"#;

    fn verify(token: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Netlify), SECRET);
        let headers: Headers = [(SIGNATURE, token)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    fn token_with(claims: &str, secret: &str) -> String {
        use base64::Engine;
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let input = format!(
            "{}.{}",
            b64(br#"{"alg":"HS256","typ":"JWT"}"#),
            b64(claims.as_bytes())
        );
        let mac = crate::signature::hmac_sha256(secret.as_bytes(), &[input.as_bytes()]);
        format!("{input}.{}", b64(&mac))
    }

    #[test]
    fn valid_request_reads_the_composed_id() {
        let verified = verify(&sign(SECRET.as_bytes(), BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "6571f0c2e4b0aa0008a1b2c3:ready:2023-11-14T22:13:20.000Z"
        );
        assert_eq!(event.event_type.as_deref(), Some("ready"));
        assert_eq!(event.object_id.as_deref(), Some("6571f0c2e4b0aa0008a1b2c3"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        assert!(verified.unsigned_metadata().is_empty());
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET.as_bytes(), BODY);
        let mut tampered = BODY.to_vec();
        tampered[30] ^= 1;
        assert_eq!(verify(&good, &tampered).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(&sign(b"other-secret", BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(verify("abc", BODY).unwrap_err(), Reason::MalformedSignature);
        let digest = body_digest(BODY);
        let other_issuer = token_with(
            &format!(r#"{{"iss":"vercel","sha256":"{digest}"}}"#),
            SECRET,
        );
        assert_eq!(verify(&other_issuer, BODY).unwrap_err(), Reason::Signature);
        let no_digest = token_with(r#"{"iss":"netlify"}"#, SECRET);
        assert_eq!(
            verify(&no_digest, BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_state = br#"{"id":"6571f0c2e4b0aa0008a1b2c3"}"#;
        assert_eq!(
            verify(&sign(SECRET.as_bytes(), no_state), no_state).unwrap_err(),
            Reason::MissingEventId
        );
    }

    #[test]
    fn upper_case_digests_verify_too() {
        let digest = body_digest(BODY).to_ascii_uppercase();
        let token = token_with(
            &format!(r#"{{"iss":"netlify","sha256":"{digest}"}}"#),
            SECRET,
        );
        assert!(verify(&token, BODY).is_ok());
    }

    /// The single-byte-change property over the JWS: a signature byte
    /// changed, or a body byte (which breaks the digest), never verifies.
    fn signed(body: &[u8]) -> Signed {
        let token = sign(SECRET.as_bytes(), body);
        let (input, mac) = token.rsplit_once('.').unwrap();
        let input = input.to_owned();
        use base64::Engine;
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        Signed {
            adapter: Box::new(Netlify),
            key: Netlify.parse_key(SECRET).unwrap(),
            signature: engine.decode(mac).unwrap(),
            headers: Box::new(move |mac| {
                let token = format!("{input}.{}", engine.encode(mac));
                [(SIGNATURE, token)].into_iter().collect()
            }),
        }
    }

    proptest! {
        #[test]
        fn single_byte_changes_never_verify(
            body in proptest::collection::vec(any::<u8>(), 1..200),
            at in any::<proptest::sample::Index>(),
            flip in 1u8..,
        ) {
            test_support::check_single_byte_changes(&signed(&body), &body, at, flip)?;
        }
    }
}
