//! Plaid's verification keys: asked of `/webhook_verification_key/get` on
//! the endpoint's Plaid environment (the only hosts), with its client id
//! and secret, by the `kid` a webhook's JWT names. Plaid answers a JWK
//! (`kty` `EC`, `crv` `P-256`, `x`, `y`) and `expired_at`, set once Plaid
//! has retired the key: a retired key verifies nothing.

use base64::Engine;
use hookinbox_verify::Key;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

/// The credentials and host of one endpoint's Plaid environment.
#[derive(Clone)]
pub struct PlaidCredentials {
    /// `production.plaid.com` or `sandbox.plaid.com`.
    pub host: &'static str,
    pub client_id: String,
    pub secret: SecretString,
}

impl std::fmt::Debug for PlaidCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlaidCredentials")
            .field("host", &self.host)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// The path of Plaid's key endpoint.
pub const KEY_PATH: &str = "/webhook_verification_key/get";

/// Why Plaid's answer gives no usable key. Fixed words: nothing of the
/// answer is repeated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaidKeyError {
    #[error("Plaid's answer is not a key")]
    Unreadable,
    #[error("the key is not an ES256 P-256 key")]
    NotP256,
    #[error("Plaid has retired the key the request names")]
    Expired,
}

/// A key id as Plaid writes them (a UUID): anything else is not asked for.
pub fn is_key_id(kid: &str) -> bool {
    !kid.is_empty()
        && kid.len() <= 64
        && kid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The JSON body of the request for `kid`.
pub fn request_body(credentials: &PlaidCredentials, kid: &str) -> Vec<u8> {
    serde_json::json!({
        "client_id": credentials.client_id,
        "secret": credentials.secret.expose_secret(),
        "key_id": kid,
    })
    .to_string()
    .into_bytes()
}

#[derive(Deserialize)]
struct Answer {
    key: Jwk,
}

#[derive(Deserialize)]
struct Jwk {
    kty: String,
    crv: String,
    #[serde(default)]
    alg: Option<String>,
    x: String,
    y: String,
    #[serde(default)]
    expired_at: Option<serde_json::Value>,
}

/// The key of Plaid's answer, unless it is retired.
pub fn parse_answer(body: &[u8]) -> Result<Key, PlaidKeyError> {
    let answer: Answer = serde_json::from_slice(body).map_err(|_| PlaidKeyError::Unreadable)?;
    let jwk = answer.key;
    if jwk.expired_at.as_ref().is_some_and(|at| !at.is_null()) {
        return Err(PlaidKeyError::Expired);
    }
    if jwk.kty != "EC" || jwk.crv != "P-256" || jwk.alg.as_deref().is_some_and(|a| a != "ES256") {
        return Err(PlaidKeyError::NotP256);
    }
    let decode = |text: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text.trim_end_matches('='))
            .map_err(|_| PlaidKeyError::NotP256)
    };
    Key::ecdsa_p256_from_coordinates(&decode(&jwk.x)?, &decode(&jwk.y)?)
        .map_err(|_| PlaidKeyError::NotP256)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JWK: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../hookinbox-verify/tests/fixtures/key_fetch/pki/plaid_jwk.json"
    ));

    #[test]
    fn a_current_key_is_read_and_a_retired_one_refused() {
        assert_eq!(parse_answer(JWK.as_bytes()).unwrap().family(), "ecdsa-p256");
        let mut retired: serde_json::Value = serde_json::from_str(JWK).unwrap();
        retired["key"]["expired_at"] = 1_700_000_000.into();
        assert_eq!(
            parse_answer(retired.to_string().as_bytes()).unwrap_err(),
            PlaidKeyError::Expired
        );
        let mut rsa: serde_json::Value = serde_json::from_str(JWK).unwrap();
        rsa["key"]["kty"] = "RSA".into();
        assert_eq!(
            parse_answer(rsa.to_string().as_bytes()).unwrap_err(),
            PlaidKeyError::NotP256
        );
        assert_eq!(parse_answer(b"{}").unwrap_err(), PlaidKeyError::Unreadable);
    }

    #[test]
    fn key_ids_are_plain() {
        assert!(is_key_id("6c5516e1-92dc-479e-a8ff-5a51992e0001"));
        for bad in ["", "../x", "a b", "k?x=1", &"a".repeat(65)] {
            assert!(!is_key_id(bad), "{bad}");
        }
    }

    #[test]
    fn the_request_carries_the_credentials() {
        let credentials = PlaidCredentials {
            host: "sandbox.plaid.com",
            client_id: "client1".into(),
            secret: "s3cret".into(),
        };
        let body: serde_json::Value =
            serde_json::from_slice(&request_body(&credentials, "kid-1")).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"client_id": "client1", "secret": "s3cret", "key_id": "kid-1"})
        );
        assert!(!format!("{credentials:?}").contains("s3cret"));
    }
}
