//! `monday` — monday.com board webhooks created by an app, with the JWT
//! monday.com puts in `Authorization`.
//!
//! Follows monday.com's "Webhooks" API reference (developer.monday.com/
//! api-reference/docs/webhooks: URL verification, payloads, retries) and its
//! apps guide "Authorization header" (developer.monday.com/apps/docs/
//! authorization-header).
//!
//! - Header: `Authorization` = a compact JWS signed with HS256 (read by
//!   [`crate::compact_jws`]: the algorithm is pinned, `alg: none` and every
//!   other algorithm refused), sent bare or after `Bearer `, keyed with the
//!   app's **Signing Secret** as UTF-8 bytes (app lifecycle webhooks are
//!   signed with the app's Client Secret instead: configure that one for
//!   such an endpoint).
//! - Signed bytes: the JWS's `header.claims` only. The claims are
//!   `accountId`, `userId`, `aud` (the endpoint URL monday.com posts to),
//!   `iat`, `exp` and a `shortLivedToken`; **nothing in them covers the
//!   body**. `aud` must equal the endpoint's `public_url` (required, exactly
//!   as given to monday.com), so a token minted for another URL is refused
//!   (`signature`). The token is thus a short-lived bearer credential for
//!   this endpoint: whoever holds one could attach any body to it for five
//!   minutes. Declared [`BodyCoverage::Token`], like a shared token; TLS
//!   protects it in transit.
//! - Tolerance: 300 s around `iat`, both directions: monday.com's tokens
//!   expire 300 s after `iat`, so the window ends where the token does. A
//!   token whose `exp` is before its `iat` is `malformed_signature`.
//! - Handshake: when a webhook is created monday.com POSTs
//!   `{"challenge": "…"}` and expects the same JSON back; it is answered
//!   (after the token is verified) and never stored.
//! - Event id: body `event.triggerUuid`, the same on every retry. Nothing
//!   binds it, so it is declared unsigned and hookinbox also de-duplicates
//!   by body fingerprint. Type: `event.type` (`update_column_value`),
//!   unsigned. Object id: `event.pulseId` (the item). Created:
//!   `event.triggerTime` (RFC 3339). No object version.
//! - Not covered: board webhooks created in monday.com's UI (not by an app)
//!   carry no token at all; this adapter refuses them (`missing_signature`).
//! - Redelivery window: monday.com retries a failed webhook once a minute
//!   for 30 minutes; one hour is kept.

use crate::compact_jws::CompactJws;
use crate::envelope::{JsonFields, Reply};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    Adapter, BodyCoverage, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, VectorSource,
};

/// The header carrying the JWT.
const AUTHORIZATION: &str = "Authorization";

/// The longest URL-verification challenge echoed back.
const MAX_CHALLENGE_LEN: usize = 256;

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "monday.com",
    docs_url: "https://developer.monday.com/apps/docs/authorization-header",
    scheme: "JWT (HS256, pinned) in `Authorization`, keyed with the app's Signing Secret",
    signed_parts: "JWT claims only (`aud` = `public_url`, `iat`, `exp`); the body is not covered",
    id_source: "body `event.triggerUuid`",
    handshake: Some("`{\"challenge\": …}` POST, echoed as JSON"),
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/provc_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug)]
pub struct Monday {
    /// The endpoint URL given to monday.com: the tokens' `aud`.
    audience: String,
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    let url = settings
        .public_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .ok_or(SettingsError::Missing {
            provider: "monday",
            field: "public_url",
        })?;
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(SettingsError::Invalid {
            field: "public_url",
            message: "expected the absolute webhook URL given to monday.com (the tokens' `aud`)"
                .into(),
        });
    }
    Ok(Box::new(Monday {
        audience: url.to_owned(),
    }))
}

impl Adapter for Monday {
    fn name(&self) -> &'static str {
        "monday"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3600
    }

    /// The token authenticates the request to this endpoint, not the body
    /// or what it says.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Token,
            event_id: false,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let value = required(request.headers, AUTHORIZATION)?;
        let token = match value.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token,
            _ => value,
        };
        let jws = CompactJws::read_hs256(token, AUTHORIZATION)?;
        let issued_at = jws
            .integer_claim("iat")
            .ok_or_else(|| Refusal::timestamp("the token has no integer `iat` claim"))?;
        if jws.integer_claim("exp").is_some_and(|exp| exp < issued_at) {
            return Err(Refusal::malformed_signature(
                "the token expires before it was issued",
            ));
        }
        if jws.string_claim("aud") != Some(self.audience.as_str()) {
            return Err(Refusal::signature(
                "the token's `aud` is not this endpoint's public_url",
            ));
        }
        Ok(jws.into_claim(Some(issued_at)))
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(
            request.body,
            &[
                "/challenge",
                "/event/triggerUuid",
                "/event/type",
                "/event/pulseId",
                "/event/triggerTime",
            ],
        )?;
        if let Some(challenge) = body.string_at("/challenge") {
            if challenge.is_empty() || challenge.len() > MAX_CHALLENGE_LEN {
                return Err(Refusal::malformed_body(
                    "the challenge is empty or too long to echo",
                ));
            }
            return Ok(Outcome::Handshake(Reply::json(
                &serde_json::json!({ "challenge": challenge }),
            )));
        }
        let event = body
            .required_id_at("/event/triggerUuid")?
            .event_type(body.string_at("/event/type"))
            .object_id(body.string_at("/event/pulseId"))
            .created_at(body.rfc3339_at("/event/triggerTime"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let token = sign(
            crate::signer::shared_secret(&key)?,
            &self.audience,
            outgoing.now,
        );
        Ok(crate::signer::SignedRequest::json(outgoing.body).header(AUTHORIZATION, token))
    }
}

/// A token as monday.com writes it for `audience` at `now`, expiring 300 s
/// later (without the account, user and API-token claims, which nothing
/// here reads). Used by the signer and tests.
#[cfg(feature = "sign")]
pub fn sign(secret: &[u8], audience: &str, now: i64) -> String {
    let mut claims = serde_json::Map::new();
    claims.insert("aud".into(), audience.into());
    claims.insert("exp".into(), (now + 300).into());
    claims.insert("iat".into(), now.into());
    crate::compact_jws::sign_hs256(secret, &claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "monday-app-signing-secret-0001";
    const URL: &str = "https://hooks.example.com/hooks/monday";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"event":{"app":"monday","type":"update_column_value","triggerTime":"2023-11-14T22:13:20.000Z","subscriptionId":73759690,"userId":4012689,"originalTriggerUuid":null,"boardId":3139815742,"groupId":"topics","pulseId":3139815748,"pulseName":"Item 1","columnId":"status","columnType":"color","columnTitle":"Status","value":{"label":{"index":1,"text":"Done"}},"previousValue":null,"changedAt":1700000000.123,"isTopGroup":true,"triggerUuid":"f6a7b0a4d6f4c0b0e1a2b3c4d5e6f7a8"}}"#;

    fn adapter() -> Box<dyn Adapter> {
        build(&AdapterSettings {
            public_url: Some(URL.into()),
            ..AdapterSettings::default()
        })
        .unwrap()
    }

    fn verify_at(token: &str, body: &[u8], now: i64) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(adapter(), SECRET);
        let headers: Headers = [(AUTHORIZATION, token)].into_iter().collect();
        test_support::verify(&verifier, &headers, body, now)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify_at(&sign(SECRET.as_bytes(), URL, NOW), BODY, NOW).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "f6a7b0a4d6f4c0b0e1a2b3c4d5e6f7a8");
        assert_eq!(event.event_type.as_deref(), Some("update_column_value"));
        assert_eq!(event.object_id.as_deref(), Some("3139815748"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        let unsigned = verified.unsigned_metadata();
        assert!(unsigned.event_id && unsigned.event_type);
        let bearer = format!("Bearer {}", sign(SECRET.as_bytes(), URL, NOW));
        assert!(verify_at(&bearer, BODY, NOW).is_ok());
    }

    #[test]
    fn the_challenge_is_echoed_as_json() {
        let body = br#"{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}"#;
        let verified = verify_at(&sign(SECRET.as_bytes(), URL, NOW), body, NOW).unwrap();
        let crate::Outcome::Handshake(reply) = verified.outcome() else {
            panic!("not a handshake: {:?}", verified.outcome());
        };
        assert_eq!(reply.content_type, "application/json");
        assert_eq!(
            reply.body,
            br#"{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}"#
        );
        // An unsigned challenge is not answered.
        assert_eq!(
            verify_at("", body, NOW).unwrap_err(),
            Reason::MissingSignature
        );
    }

    #[test]
    fn the_token_lives_300_seconds_either_way() {
        test_support::assert_window(NOW, 300, |issued_at| {
            verify_at(&sign(SECRET.as_bytes(), URL, issued_at), BODY, NOW)
        });
    }

    #[test]
    fn refusals() {
        let other_url = sign(
            SECRET.as_bytes(),
            "https://hooks.example.com/hooks/other",
            NOW,
        );
        assert_eq!(
            verify_at(&other_url, BODY, NOW).unwrap_err(),
            Reason::Signature
        );
        let other_secret = sign(b"the-client-secret", URL, NOW);
        assert_eq!(
            verify_at(&other_secret, BODY, NOW).unwrap_err(),
            Reason::Signature
        );
        let mut claims = serde_json::Map::new();
        claims.insert("aud".into(), URL.into());
        claims.insert("iat".into(), NOW.into());
        claims.insert("exp".into(), (NOW - 1).into());
        let backwards = crate::compact_jws::sign_hs256(SECRET.as_bytes(), &claims);
        assert_eq!(
            verify_at(&backwards, BODY, NOW).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_id = br#"{"event":{"type":"create_item"}}"#;
        assert_eq!(
            verify_at(&sign(SECRET.as_bytes(), URL, NOW), no_id, NOW).unwrap_err(),
            Reason::MissingEventId
        );
        let long = format!(r#"{{"challenge":"{}"}}"#, "a".repeat(MAX_CHALLENGE_LEN + 1));
        assert_eq!(
            verify_at(&sign(SECRET.as_bytes(), URL, NOW), long.as_bytes(), NOW).unwrap_err(),
            Reason::MalformedBody
        );
    }

    #[test]
    fn the_public_url_is_required() {
        assert!(matches!(
            build(&AdapterSettings::default()).unwrap_err(),
            SettingsError::Missing { .. }
        ));
        assert!(matches!(
            build(&AdapterSettings {
                public_url: Some("hooks.example.com".into()),
                ..AdapterSettings::default()
            })
            .unwrap_err(),
            SettingsError::Invalid { .. }
        ));
    }
}
