//! Verification keys: what a configured secret string becomes once its
//! provider has decoded it. Each provider decides that decoding (Stripe uses
//! the whole `whsec_…` string, Standard Webhooks base64 after `whsec_`, Adyen
//! hex), so a secret that cannot be decoded is caught at start-up.
//!
//! Shared-secret key bytes are a [`SecretSlice`] (the `secrecy` crate's
//! `SecretBox`, the one secret type of hookinbox): `Debug` is redacted and
//! the bytes are zeroed when dropped.

use base64::Engine;
use secrecy::SecretSlice;
use zeroize::Zeroizing;

/// A key able to check one family of signatures.
#[derive(Debug, Clone)]
pub enum Key {
    /// A shared secret for HMAC (SHA-256 or SHA-1, as the candidate says).
    Hmac(SecretSlice<u8>),
    /// A shared token compared as a whole (GitLab's `X-Gitlab-Token`).
    Token(SecretSlice<u8>),
    /// An Ed25519 public key.
    Ed25519(ed25519_dalek::VerifyingKey),
    /// An ECDSA P-256 public key (signatures over SHA-256).
    EcdsaP256(p256::ecdsa::VerifyingKey),
    /// An RSA public key, as the DER `RSAPublicKey` (PKCS#1) that `ring`
    /// verifies PKCS#1 v1.5 SHA-256 signatures with (2048 to 8192 bits).
    Rsa(Vec<u8>),
}

/// Why a configured secret could not become a key. The message names what is
/// wrong with the *shape* of the value, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the secret is empty")]
    Empty,
    #[error("expected the prefix `{0}`")]
    MissingPrefix(&'static str),
    #[error("not valid base64")]
    Base64,
    #[error("not valid hex")]
    Hex,
    #[error("not a valid {0} public key")]
    PublicKey(&'static str),
    /// The provider serves its own keys (docs/architecture.md §3); a
    /// configured secret would never be used.
    #[error("this provider's keys are fetched from its own hosts: configure no secret")]
    FetchedFromProvider,
}

impl Key {
    /// An HMAC key made of the secret string's own bytes.
    pub fn hmac_from_utf8(secret: &str) -> Result<Key, KeyError> {
        non_empty(secret)?;
        Ok(Key::Hmac(secret_bytes(secret.as_bytes())))
    }

    /// A token key made of the secret string's own bytes.
    pub fn token_from_utf8(secret: &str) -> Result<Key, KeyError> {
        non_empty(secret)?;
        Ok(Key::Token(secret_bytes(secret.as_bytes())))
    }

    /// An HMAC key from standard base64 (padding optional).
    pub fn hmac_from_base64(encoded: &str) -> Result<Key, KeyError> {
        non_empty(encoded)?;
        let bytes = Zeroizing::new(decode_base64(encoded).ok_or(KeyError::Base64)?);
        Ok(Key::Hmac(secret_bytes(&bytes)))
    }

    /// An HMAC key from hex.
    pub fn hmac_from_hex(encoded: &str) -> Result<Key, KeyError> {
        non_empty(encoded)?;
        let bytes = Zeroizing::new(hex::decode(encoded.trim()).map_err(|_| KeyError::Hex)?);
        Ok(Key::Hmac(secret_bytes(&bytes)))
    }

    /// An Ed25519 public key from its 32 raw bytes.
    pub fn ed25519_from_bytes(bytes: &[u8]) -> Result<Key, KeyError> {
        let raw: [u8; 32] = bytes
            .try_into()
            .map_err(|_| KeyError::PublicKey("Ed25519"))?;
        ed25519_dalek::VerifyingKey::from_bytes(&raw)
            .map(Key::Ed25519)
            .map_err(|_| KeyError::PublicKey("Ed25519"))
    }

    /// An ECDSA P-256 public key from its SubjectPublicKeyInfo DER encoding
    /// (the body of a `-----BEGIN PUBLIC KEY-----` block, as SendGrid shows it).
    pub fn ecdsa_p256_from_spki_der(der: &[u8]) -> Result<Key, KeyError> {
        use p256::pkcs8::DecodePublicKey;
        p256::ecdsa::VerifyingKey::from_public_key_der(der)
            .map(Key::EcdsaP256)
            .map_err(|_| KeyError::PublicKey("ECDSA P-256"))
    }

    /// An ECDSA P-256 public key from its affine coordinates, 32 bytes each
    /// (a JWK's `x` and `y` decoded, as Plaid serves its keys).
    pub fn ecdsa_p256_from_coordinates(x: &[u8], y: &[u8]) -> Result<Key, KeyError> {
        if x.len() != 32 || y.len() != 32 {
            return Err(KeyError::PublicKey("ECDSA P-256"));
        }
        let point = p256::EncodedPoint::from_affine_coordinates(x.into(), y.into(), false);
        p256::ecdsa::VerifyingKey::from_encoded_point(&point)
            .map(Key::EcdsaP256)
            .map_err(|_| KeyError::PublicKey("ECDSA P-256"))
    }

    /// An RSA public key from its SubjectPublicKeyInfo DER encoding (the
    /// body of a `-----BEGIN PUBLIC KEY-----` block). Anything but an
    /// `rsaEncryption` key is refused.
    pub fn rsa_from_spki_der(der: &[u8]) -> Result<Key, KeyError> {
        use p256::pkcs8::spki::{ObjectIdentifier, SubjectPublicKeyInfoRef};
        const RSA_ENCRYPTION: ObjectIdentifier =
            ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
        let info =
            SubjectPublicKeyInfoRef::try_from(der).map_err(|_| KeyError::PublicKey("RSA"))?;
        if info.algorithm.oid != RSA_ENCRYPTION {
            return Err(KeyError::PublicKey("RSA"));
        }
        let pkcs1 = info
            .subject_public_key
            .as_bytes()
            .ok_or(KeyError::PublicKey("RSA"))?;
        Ok(Key::Rsa(pkcs1.to_vec()))
    }

    /// An RSA public key from a PEM `PUBLIC KEY` block (SubjectPublicKeyInfo).
    pub fn rsa_from_spki_pem(pem: &str) -> Result<Key, KeyError> {
        let body: String = pem
            .lines()
            .map(str::trim)
            .filter(|line| !line.starts_with("-----"))
            .collect();
        let der = decode_base64(&body).ok_or(KeyError::Base64)?;
        Self::rsa_from_spki_der(&der)
    }

    /// The name of the key family, for diagnostics.
    pub fn family(&self) -> &'static str {
        match self {
            Key::Hmac(_) => "hmac",
            Key::Token(_) => "token",
            Key::Ed25519(_) => "ed25519",
            Key::EcdsaP256(_) => "ecdsa-p256",
            Key::Rsa(_) => "rsa",
        }
    }
}

/// A copy of `bytes` as a secret, allocated at its exact length (a vector
/// that had to shrink would leave its first buffer behind, not zeroed).
fn secret_bytes(bytes: &[u8]) -> SecretSlice<u8> {
    SecretSlice::from(bytes.to_vec())
}

fn non_empty(secret: &str) -> Result<(), KeyError> {
    if secret.trim().is_empty() {
        Err(KeyError::Empty)
    } else {
        Ok(())
    }
}

/// Decodes standard base64 with or without padding.
pub fn decode_base64(encoded: &str) -> Option<Vec<u8>> {
    let trimmed = encoded.trim();
    base64::engine::general_purpose::STANDARD
        .decode(trimmed)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(trimmed))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_secret() {
        let key = Key::hmac_from_utf8("whsec_topsecret").unwrap();
        let printed = format!("{key:?}");
        assert!(!printed.contains("topsecret"), "{printed}");
    }

    #[test]
    fn shapes_are_checked() {
        assert_eq!(Key::hmac_from_utf8(" ").unwrap_err(), KeyError::Empty);
        assert_eq!(Key::hmac_from_hex("zz").unwrap_err(), KeyError::Hex);
        assert_eq!(Key::hmac_from_base64("!!").unwrap_err(), KeyError::Base64);
        assert!(Key::ed25519_from_bytes(&[1; 31]).is_err());
        assert_eq!(
            Key::ecdsa_p256_from_spki_der(&[0x30, 0x00]).unwrap_err(),
            KeyError::PublicKey("ECDSA P-256")
        );
    }
}
