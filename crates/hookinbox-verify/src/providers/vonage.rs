//! `vonage` — Vonage signed webhooks (Messages API, Voice API):
//! `Authorization: Bearer <JWT>`.
//!
//! Follows Vonage's "Signed webhooks" page (developer.vonage.com/en/
//! getting-started/concepts/webhooks#signed-webhooks) and its SDKs'
//! verifier, vonage-jwt's `verify_signature` (PyPI; `@vonage/jwt`'s
//! `verifySignature` does the same), which the fixtures were checked with.
//!
//! - Header: `Authorization: Bearer <JWT>`, a compact JWS signed with HS256
//!   (read by [`crate::compact_jws`]: the algorithm is pinned, `alg: none`
//!   and every other algorithm refused), keyed with the account's
//!   **signature secret** (Dashboard → API settings), as UTF-8 bytes — not
//!   the API secret.
//! - Signed bytes: the JWS's `header.claims`. The claims carry `iat` (issue
//!   time, unix seconds), `jti`, `iss`, `api_key`, `application_id` and
//!   `payload_hash` = hex SHA-256 of the raw body, which binds the body: a
//!   body whose digest is not the claim's is refused as `signature` (a
//!   public digest, so a plain comparison); a token without the claim is
//!   `malformed_signature`.
//! - Tolerance: 300 s around `iat`, both directions (Vonage asks receivers
//!   to check that the token is recent; the window is hookinbox's usual one).
//! - Event id: `jti` is new on every send, so it cannot be the event's id.
//!   The id is composed of signed body values a retry re-sends unchanged:
//!   `"{message_uuid}:{status}"` for a Messages status,
//!   `"{message_uuid}"` for an inbound message, `"{uuid}:{status}"` for a
//!   Voice call event. A natural key, not a hash. A body with none of
//!   these is `missing_event_id`.
//! - Type: `status` (`delivered`, `answered`, …), or `inbound` for an
//!   inbound message. Object id: `message_uuid`, else the call's
//!   `conversation_uuid`. Created: `timestamp` (RFC 3339). No object version.
//! - Redelivery window: Vonage retries a failed Messages webhook for up to
//!   24 hours; 24 hours are kept.

use sha2::Digest;

use crate::compact_jws::CompactJws;
use crate::envelope::{Envelope, JsonFields};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    Adapter, Key, KeyError, Outcome, ProviderFacts, Refusal, Request, SignatureClaim,
    SignatureCoverage, VectorSource,
};

/// The header carrying `Bearer <JWT>`.
const AUTHORIZATION: &str = "Authorization";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Vonage",
    docs_url: "https://developer.vonage.com/en/getting-started/concepts/webhooks#signed-webhooks",
    scheme: "JWT (HS256, pinned) in `Authorization: Bearer`, keyed with the signature secret",
    signed_parts: "JWT claims, among them `iat` and `payload_hash` = hex SHA-256 of the raw body",
    id_source: "`{message_uuid}:{status}`, `{message_uuid}` or `{uuid}:{status}`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("vonage-jwt (PyPI)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Vonage;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Vonage))
}

impl Adapter for Vonage {
    fn name(&self) -> &'static str {
        "vonage"
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

    /// The token's `payload_hash` binds the body, from which the id and the
    /// status are read.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let value = required(request.headers, AUTHORIZATION)?;
        let token = value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token)
            .ok_or_else(|| Refusal::malformed_signature("Authorization is not a Bearer token"))?;
        let jws = CompactJws::read_hs256(token, AUTHORIZATION)?;
        let issued_at = jws
            .integer_claim("iat")
            .ok_or_else(|| Refusal::timestamp("the token has no integer `iat` claim"))?;
        let claimed = jws
            .string_claim("payload_hash")
            .ok_or_else(|| Refusal::malformed_signature("the token has no `payload_hash` claim"))?;
        if !claimed.eq_ignore_ascii_case(&body_digest(request.body)) {
            return Err(Refusal::signature(
                "the body's SHA-256 is not the token's `payload_hash` claim",
            ));
        }
        Ok(jws.into_claim(Some(issued_at)))
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = JsonFields::read(
            request.body,
            &[
                "/message_uuid",
                "/uuid",
                "/status",
                "/conversation_uuid",
                "/timestamp",
            ],
        )?;
        let status = body.string_at("/status");
        let (event_id, object_id) = match (body.string_at("/message_uuid"), &status) {
            (Some(message), Some(status)) => (format!("{message}:{status}"), Some(message)),
            (Some(message), None) => (message.clone(), Some(message)),
            (None, Some(status)) => match body.string_at("/uuid") {
                Some(call) => (
                    format!("{call}:{status}"),
                    body.string_at("/conversation_uuid"),
                ),
                None => return Err(no_id()),
            },
            (None, None) => return Err(no_id()),
        };
        let event = Envelope::with_id(event_id)?
            .event_type(status.or_else(|| Some("inbound".to_owned())))
            .object_id(object_id)
            .created_at(body.rfc3339_at("/timestamp"));
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
            outgoing.now,
            outgoing.event_id,
            outgoing.body,
        );
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(AUTHORIZATION, format!("Bearer {token}")))
    }
}

fn no_id() -> Refusal {
    Refusal::missing_event_id("no `message_uuid`, nor a call `uuid` with its `status`")
}

/// Hex SHA-256 of the body, as Vonage writes its `payload_hash` claim.
fn body_digest(body: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(body))
}

/// A token as Vonage writes it for `body` at `now`, with `jti` as its token
/// id (Vonage's is a random UUID). Used by the signer and tests.
#[cfg(feature = "sign")]
pub fn sign(secret: &[u8], now: i64, jti: &str, body: &[u8]) -> String {
    let mut claims = serde_json::Map::new();
    claims.insert("iat".into(), now.into());
    claims.insert("iss".into(), "Vonage".into());
    claims.insert("jti".into(), jti.into());
    claims.insert("payload_hash".into(), body_digest(body).into());
    crate::compact_jws::sign_hs256(secret, &claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "vonage-signature-secret-0001";
    const NOW: i64 = 1_700_000_000;
    const STATUS: &[u8] = br#"{"message_uuid":"aaaaaaaa-bbbb-4ccc-8ddd-0123456789ab","to":"447700900000","from":"447700900001","timestamp":"2023-11-14T22:13:20Z","status":"delivered","channel":"sms","usage":{"currency":"EUR","price":"0.0333"}}"#;
    const INBOUND: &[u8] = br#"{"channel":"whatsapp","message_uuid":"bbbbbbbb-bbbb-4ccc-8ddd-0123456789ab","to":"447700900000","from":"447700900001","timestamp":"2023-11-14T22:13:20Z","message_type":"text","text":"Hello"}"#;
    const CALL: &[u8] = br#"{"uuid":"63f61863-4a51-4f6b-86e1-46edebcf9356","conversation_uuid":"CON-f972836a-550f-45fa-956c-12a2ab5b7d22","status":"answered","direction":"outbound","timestamp":"2023-11-14T22:13:20.000Z"}"#;

    fn verify_at(token: &str, body: &[u8], now: i64) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Vonage), SECRET);
        let headers: Headers = [(AUTHORIZATION, format!("Bearer {token}"))]
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, now)
    }

    fn token(body: &[u8]) -> String {
        sign(
            SECRET.as_bytes(),
            NOW,
            "4f0b3f4e-0000-4000-8000-000000000001",
            body,
        )
    }

    #[test]
    fn ids_come_from_the_signed_body() {
        let status = verify_at(&token(STATUS), STATUS, NOW).unwrap();
        let event = status.event().unwrap();
        assert_eq!(
            event.event_id,
            "aaaaaaaa-bbbb-4ccc-8ddd-0123456789ab:delivered"
        );
        assert_eq!(event.event_type.as_deref(), Some("delivered"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("aaaaaaaa-bbbb-4ccc-8ddd-0123456789ab")
        );
        assert_eq!(event.created_at, Some(1_700_000_000));

        let inbound = verify_at(&token(INBOUND), INBOUND, NOW).unwrap();
        let event = inbound.event().unwrap();
        assert_eq!(event.event_id, "bbbbbbbb-bbbb-4ccc-8ddd-0123456789ab");
        assert_eq!(event.event_type.as_deref(), Some("inbound"));

        let call = verify_at(&token(CALL), CALL, NOW).unwrap();
        let event = call.event().unwrap();
        assert_eq!(
            event.event_id,
            "63f61863-4a51-4f6b-86e1-46edebcf9356:answered"
        );
        assert_eq!(
            event.object_id.as_deref(),
            Some("CON-f972836a-550f-45fa-956c-12a2ab5b7d22")
        );
    }

    #[test]
    fn the_issue_time_is_checked_both_ways() {
        test_support::assert_window(NOW, 300, |signed_at| {
            let token = sign(SECRET.as_bytes(), signed_at, "jti-1", STATUS);
            verify_at(&token, STATUS, NOW)
        });
    }

    #[test]
    fn refusals() {
        let good = token(STATUS);
        let mut tampered = STATUS.to_vec();
        tampered[20] ^= 1;
        assert_eq!(
            verify_at(&good, &tampered, NOW).unwrap_err(),
            Reason::Signature
        );
        let other = sign(b"the-api-secret-not-the-signature-secret", NOW, "j", STATUS);
        assert_eq!(
            verify_at(&other, STATUS, NOW).unwrap_err(),
            Reason::Signature
        );
        let headers: Headers = [(AUTHORIZATION, format!("Basic {good}"))]
            .into_iter()
            .collect();
        let verifier = test_support::verifier(Box::new(Vonage), SECRET);
        assert_eq!(
            test_support::verify(&verifier, &headers, STATUS, NOW).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            test_support::verify(&verifier, &Headers::new(), STATUS, NOW).unwrap_err(),
            Reason::MissingSignature
        );
        let no_id = br#"{"channel":"sms","status":"delivered"}"#;
        assert_eq!(
            verify_at(&token(no_id), no_id, NOW).unwrap_err(),
            Reason::MissingEventId
        );
    }

    fn signed(body: &[u8]) -> Signed {
        use base64::Engine;
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let token = token(body);
        let (input, mac) = token.rsplit_once('.').unwrap();
        let input = input.to_owned();
        Signed {
            adapter: Box::new(Vonage),
            key: Vonage.parse_key(SECRET).unwrap(),
            signature: engine.decode(mac).unwrap(),
            headers: Box::new(move |mac| {
                let token = format!("Bearer {input}.{}", engine.encode(mac));
                [(AUTHORIZATION, token)].into_iter().collect()
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
