//! `plaid` — Plaid webhooks, verified with the key Plaid's API serves for
//! the token's key id (docs/architecture.md §3, "Keys fetched from the
//! provider").
//!
//! Follows Plaid's "Webhook verification" page
//! (plaid.com/docs/api/webhooks/webhook-verification/):
//!
//! - Header: `Plaid-Verification`, a JWT (JWS compact: three base64url
//!   parts). Its header must say `"alg":"ES256"` (anything else is refused
//!   before any key is looked up) and names the key by `kid`.
//! - Signed bytes: `{header}.{payload}` as sent, ECDSA P-256 with SHA-256,
//!   the signature as the 64 raw bytes `r || s`.
//! - The payload binds the body: `request_body_sha256` must be the hex
//!   SHA-256 of the raw body (refused `signature` otherwise), and `iat` is
//!   the signed time.
//! - Key: none configured. The adapter names the `kid`; the service asks
//!   Plaid's `/webhook_verification_key/get` with the endpoint's Plaid
//!   credentials, and a key Plaid marks expired is not used.
//! - Tolerance: 5 minutes on `iat`, as Plaid says, either way.
//! - Event id: Plaid's webhooks carry none (`webhook_type`, `webhook_code`,
//!   `item_id`, …), and two real notifications can have the same body (a
//!   second `SYNC_UPDATES_AVAILABLE` for one item), so neither the body nor
//!   its hash can name one (docs/architecture.md §3). The id is built from
//!   signed values: `{webhook_type}.{webhook_code}:{item_id}@{iat}`, the
//!   token's signed time making each sending its own event. A retry Plaid
//!   signs anew is then stored again: at least once, never lost — Plaid's
//!   webhooks are hints to call its API, which is idempotent.
//!   Type: `{webhook_type}.{webhook_code}`. Object id: `item_id`.
//! - Redelivery window: one day.

use base64::Engine;
use serde::Deserialize;
use sha2::Digest;

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Candidate, Key, KeyError, KeyReference, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignedMessage,
};

/// The header carrying the JWT.
pub const HEADER: &str = "Plaid-Verification";

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Plaid",
    docs_url: "https://plaid.com/docs/api/webhooks/webhook-verification/",
    scheme: "JWT (ES256) in `Plaid-Verification`, under the key Plaid's API serves for its `kid`",
    signed_parts: "the JWT, whose `request_body_sha256` is the SHA-256 of the raw body and `iat` the signed time",
    id_source: "`{webhook_type}.{webhook_code}:{item_id}@{iat}`: the JWT's signed time names each sending",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/key_fetch_vectors.py",
    ),
    signing: crate::Signing::Asymmetric,
};

#[derive(Debug, Default)]
pub struct Plaid;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Plaid))
}

#[derive(Deserialize)]
struct JwtHeader {
    alg: String,
    kid: Option<String>,
}

#[derive(Deserialize)]
struct JwtClaims {
    iat: i64,
    request_body_sha256: String,
}

/// The three parts of the token, split and the first two decoded.
struct Token<'h> {
    signed: &'h str,
    header: JwtHeader,
    payload: &'h str,
    signature: &'h str,
}

fn base64url(part: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .ok()
}

/// The token's signed claims (its signature is checked by the pipeline).
fn claims(token: &Token<'_>) -> Result<JwtClaims, Refusal> {
    base64url(token.payload)
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| {
            Refusal::malformed_signature(
                "the JWT payload is not base64url JSON with iat and request_body_sha256",
            )
        })
}

fn token<'h>(request: &Request<'h>) -> Result<Token<'h>, Refusal> {
    let jwt = request
        .headers
        .get_nonempty(HEADER)
        .ok_or_else(|| Refusal::missing_signature(format!("no {HEADER} header")))?
        .trim();
    let mut parts = jwt.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refusal::malformed_signature(format!(
            "{HEADER} is not a JWT of three parts"
        )));
    };
    let header: JwtHeader = base64url(header)
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| Refusal::malformed_signature("the JWT header is not base64url JSON"))?;
    if header.alg != "ES256" {
        return Err(Refusal::malformed_signature("the JWT is not ES256"));
    }
    Ok(Token {
        signed: &jwt[..jwt.len() - signature.len() - 1],
        header,
        payload,
        signature,
    })
}

impl Adapter for Plaid {
    fn name(&self) -> &'static str {
        "plaid"
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

    /// The token signs the body's hash; the id is the body's fingerprint
    /// and the type is read from the body.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, _secret: &str) -> Result<Key, KeyError> {
        Err(KeyError::FetchedFromProvider)
    }

    fn fetches_keys(&self) -> bool {
        true
    }

    fn key_reference(&self, request: &Request<'_>) -> Result<Option<KeyReference>, Refusal> {
        let token = token(request)?;
        let kid = token
            .header
            .kid
            .filter(|kid| !kid.is_empty())
            .ok_or_else(|| Refusal::malformed_signature("the JWT names no kid"))?;
        Ok(Some(KeyReference::KeyId { kid }))
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let token = token(request)?;
        let claims = claims(&token)?;
        let signature = base64url(token.signature)
            .filter(|bytes| bytes.len() == 64)
            .ok_or_else(|| Refusal::malformed_signature("the JWT signature is not 64 bytes"))?;
        // The body is bound through its hash in the signed payload; a body
        // whose hash is another cannot be the one signed. (Both hashes are
        // of public data: nothing secret is compared.)
        let body_sha256 = hex::encode(sha2::Sha256::digest(request.body));
        if !claims
            .request_body_sha256
            .eq_ignore_ascii_case(&body_sha256)
        {
            return Err(Refusal::signature(
                "the body's SHA-256 is not the request_body_sha256 the token carries",
            ));
        }
        Ok(SignatureClaim {
            timestamp: Some(claims.iat),
            message: SignedMessage::new().owned(token.signed.as_bytes().to_vec()),
            candidates: vec![Candidate::new(Algorithm::EcdsaP256Sha256, signature)],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let (Some(kind), Some(code)) = (
            envelope::string_at(&body, "/webhook_type"),
            envelope::string_at(&body, "/webhook_code"),
        ) else {
            return Err(Refusal::missing_event_id(
                "no `webhook_type` and `webhook_code` to name the event",
            ));
        };
        let event_type = format!("{kind}.{code}");
        let signed_at = claims(&token(request)?)?.iat;
        let item = envelope::string_at(&body, "/item_id");
        let id = match &item {
            Some(item) => format!("{event_type}:{item}@{signed_at}"),
            None => format!("{event_type}@{signed_at}"),
        };
        let event = Envelope::with_id(id)?
            .event_type(Some(event_type))
            .object_id(item);
        Ok(Outcome::Event(event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Headers, Reason, ResolvedKey, SecretInput, Verifier};
    use p256::ecdsa::signature::Signer;

    const NOW: i64 = 1_767_225_600;
    const BODY: &[u8] = br#"{"environment":"sandbox","item_id":"wz666MBjYWTp2PDzzggYhM6oWWmBb","new_transactions":3,"webhook_code":"DEFAULT_UPDATE","webhook_type":"TRANSACTIONS"}"#;

    fn signing_key() -> p256::ecdsa::SigningKey {
        p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap()
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    fn jwt(alg: &str, kid: &str, iat: i64, body: &[u8]) -> String {
        let header = b64(format!(r#"{{"alg":"{alg}","kid":"{kid}","typ":"JWT"}}"#).as_bytes());
        let payload = b64(format!(
            r#"{{"iat":{iat},"request_body_sha256":"{}"}}"#,
            hex::encode(sha2::Sha256::digest(body))
        )
        .as_bytes());
        let signed = format!("{header}.{payload}");
        let signature: p256::ecdsa::Signature = signing_key().sign(signed.as_bytes());
        format!("{signed}.{}", b64(&signature.to_bytes()))
    }

    fn public_key() -> Key {
        let point = signing_key().verifying_key().to_encoded_point(false);
        Key::ecdsa_p256_from_coordinates(point.x().unwrap(), point.y().unwrap()).unwrap()
    }

    fn verify(token: &str, body: &[u8], now: i64, key: Key) -> Result<crate::Verified, Reason> {
        let verifier = Verifier::new(Box::new(Plaid), Vec::<SecretInput>::new()).unwrap();
        let headers: Headers = [(HEADER, token)].into_iter().collect();
        let fetched = ResolvedKey {
            reference: KeyReference::KeyId {
                kid: "kid-1".into(),
            },
            key,
        };
        verifier
            .verify_with_keys(&Request::new(&headers, body), now, &fetched)
            .map_err(|f| f.refusal.reason)
    }

    #[test]
    fn a_valid_token_verifies_and_names_its_key() {
        let token = jwt("ES256", "kid-1", NOW, BODY);
        let verified = verify(&token, BODY, NOW, public_key()).unwrap();
        let event = verified.event().unwrap();
        // Built from signed values: the type, the item and the token's time.
        assert_eq!(
            event.event_id,
            format!("TRANSACTIONS.DEFAULT_UPDATE:wz666MBjYWTp2PDzzggYhM6oWWmBb@{NOW}")
        );
        assert_eq!(
            event.event_type.as_deref(),
            Some("TRANSACTIONS.DEFAULT_UPDATE")
        );
        assert_eq!(
            event.object_id.as_deref(),
            Some("wz666MBjYWTp2PDzzggYhM6oWWmBb")
        );
        let headers: Headers = [(HEADER, token.as_str())].into_iter().collect();
        assert_eq!(
            Plaid.key_reference(&Request::new(&headers, BODY)).unwrap(),
            Some(KeyReference::KeyId {
                kid: "kid-1".into()
            })
        );
    }

    #[test]
    fn refusals() {
        let token = jwt("ES256", "kid-1", NOW, BODY);
        let mut tampered = BODY.to_vec();
        tampered[5] ^= 1;
        assert_eq!(
            verify(&token, &tampered, NOW, public_key()).unwrap_err(),
            Reason::Signature
        );
        let other = p256::ecdsa::SigningKey::from_slice(&[9u8; 32]).unwrap();
        let point = other.verifying_key().to_encoded_point(false);
        let wrong =
            Key::ecdsa_p256_from_coordinates(point.x().unwrap(), point.y().unwrap()).unwrap();
        assert_eq!(
            verify(&token, BODY, NOW, wrong).unwrap_err(),
            Reason::Signature
        );
        crate::test_support::assert_window(NOW, 300, |now| verify(&token, BODY, now, public_key()));
        assert_eq!(
            verify(&jwt("HS256", "kid-1", NOW, BODY), BODY, NOW, public_key()).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify("a.b", BODY, NOW, public_key()).unwrap_err(),
            Reason::MalformedSignature
        );
        let mut bad_sig = token.clone();
        bad_sig.push('A');
        assert_eq!(
            verify(&bad_sig, BODY, NOW, public_key()).unwrap_err(),
            Reason::MalformedSignature
        );
    }
}
