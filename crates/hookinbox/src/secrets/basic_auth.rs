//! HTTP basic auth on an endpoint: a credential of the endpoint's own,
//! checked beside the provider's signature.
//!
//! It exists for schemes whose signature does not cover the body (Mailgun
//! signs a token and a timestamp with the account-wide key, so anyone who
//! receives any webhook of that account could attach any body to its
//! signature block). Credentials put in the webhook URL
//! (`https://user:password@host/hooks/mailgun`) reach only this endpoint, so
//! requiring them binds the request to it. Any endpoint may set it.
//!
//! The credential is compared in constant time, through SHA-256 digests so
//! the time does not reveal its length either. It is never logged and never
//! stored: `Authorization` is excluded from the audit headers.

use hookinbox_verify::{Headers, Refusal};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The credential an endpoint requires, ready to check requests against.
pub struct BasicAuth {
    /// SHA-256 of `"{username}:{password}"`, the decoded form of the
    /// credentials in an `Authorization: Basic` header.
    expected: [u8; 32],
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BasicAuth([redacted])")
    }
}

impl BasicAuth {
    /// The credential `username:password` (`config::BasicAuth` checked the
    /// user name, and the password was read from its source).
    pub fn new(username: &str, password: &SecretString) -> BasicAuth {
        // Hashed piece by piece: no joined copy of the password is made.
        let expected = Sha256::new()
            .chain_update(username)
            .chain_update(":")
            .chain_update(password.expose_secret())
            .finalize()
            .into();
        BasicAuth { expected }
    }

    /// Checks a request's `Authorization` header: no basic credentials is
    /// `missing_signature`, any other credentials `signature` (both 401).
    pub fn check(&self, headers: &Headers) -> Result<(), Refusal> {
        let presented = headers
            .get_nonempty("authorization")
            .and_then(|value| {
                let (scheme, credentials) = value.split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("basic")
                    .then(|| credentials.trim())
            })
            .ok_or_else(|| {
                Refusal::missing_signature("no basic auth credentials (the endpoint requires them)")
            })?;
        // Undecodable credentials are compared as empty, so they take the
        // same path as wrong ones.
        let decoded = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, presented)
            .unwrap_or_default();
        let digest: [u8; 32] = Sha256::digest(decoded).into();
        if bool::from(digest.ct_eq(&self.expected)) {
            Ok(())
        } else {
            Err(Refusal::signature(
                "the basic auth credentials do not match",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookinbox_verify::Reason;

    fn check(auth: &BasicAuth, authorization: Option<&str>) -> Result<(), Reason> {
        let mut headers = Headers::new();
        if let Some(value) = authorization {
            headers.append("Authorization", value);
        }
        auth.check(&headers).map_err(|refusal| refusal.reason)
    }

    fn basic(credentials: &str) -> String {
        let encoded =
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, credentials);
        format!("Basic {encoded}")
    }

    #[test]
    fn only_the_configured_credentials_pass() {
        let auth = BasicAuth::new("mailgun", &"s3cret".into());
        assert_eq!(check(&auth, Some(&basic("mailgun:s3cret"))), Ok(()));
        // The scheme name is case-insensitive (RFC 7235).
        let lower = basic("mailgun:s3cret").replacen("Basic", "basic", 1);
        assert_eq!(check(&auth, Some(&lower)), Ok(()));
        for wrong in [
            basic("mailgun:s3cre"),
            basic("mailgun:s3cret "),
            basic("mailgun2:s3cret"),
            basic("mailguns3cret"),
            "Basic not-base64!".to_owned(),
        ] {
            assert_eq!(
                check(&auth, Some(&wrong)),
                Err(Reason::Signature),
                "{wrong}"
            );
        }
        for missing in [None, Some("Bearer s3cret"), Some("Basic"), Some("")] {
            assert_eq!(
                check(&auth, missing),
                Err(Reason::MissingSignature),
                "{missing:?}"
            );
        }
    }
}
