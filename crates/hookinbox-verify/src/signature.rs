//! The signature claim an adapter reads from a request, and the one
//! constant-time check that compares it with a key.
//!
//! Adapters never compare signatures themselves: they say which bytes were
//! signed ([`SignedMessage`]) and which signatures were presented
//! ([`Candidate`]); [`SignatureClaim::is_signed_by`] does the cryptography
//! with RustCrypto / dalek primitives.

use std::borrow::Cow;

use hmac::{Hmac, Mac};
use sha2::Digest;
use subtle::ConstantTimeEq;

use secrecy::ExposeSecret;

use crate::Key;

/// The algorithm of one presented signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    HmacSha256,
    HmacSha1,
    /// HMAC-SHA512 (Paystack).
    HmacSha512,
    Ed25519,
    /// ECDSA P-256 over SHA-256; candidate bytes are the DER signature.
    EcdsaP256Sha256,
    /// RSA PKCS#1 v1.5 over SHA-256; candidate bytes are the signature.
    RsaPkcs1Sha256,
    /// RSA PKCS#1 v1.5 over SHA-1 (AWS SNS `SignatureVersion` 1 only; SNS
    /// still signs with it unless a topic asks for version 2).
    RsaPkcs1Sha1,
    /// A shared token sent as is; the signed message is ignored.
    Token,
    /// SHA-256 of the secret followed by the signed bytes: a keyed hash, not
    /// an HMAC (Recharge's `X-Recharge-Hmac-Sha256`, despite its name).
    SecretPrefixedSha256,
}

/// One signature presented by the request, already decoded from its
/// transport encoding (hex, base64).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub algorithm: Algorithm,
    pub bytes: Vec<u8>,
}

impl Candidate {
    pub fn new(algorithm: Algorithm, bytes: Vec<u8>) -> Self {
        Candidate { algorithm, bytes }
    }
}

/// The exact bytes the provider signed, as pieces that are hashed in order
/// without copying the body.
#[derive(Debug, Clone, Default)]
pub struct SignedMessage<'r> {
    parts: Vec<Cow<'r, [u8]>>,
    /// Whole other byte strings the provider may have signed instead, for
    /// schemes whose sender is inconsistent about one detail (Twilio signs its
    /// URL sometimes with, sometimes without the default port). A signature
    /// over any one of them counts.
    alternatives: Vec<Vec<Cow<'r, [u8]>>>,
}

impl<'r> SignedMessage<'r> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends borrowed bytes (typically the raw body).
    pub fn borrowed(mut self, bytes: &'r [u8]) -> Self {
        self.parts.push(Cow::Borrowed(bytes));
        self
    }

    /// Appends owned bytes (a timestamp, a separator, a URL).
    pub fn owned(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.parts.push(Cow::Owned(bytes.into()));
        self
    }

    pub fn parts(&self) -> impl Iterator<Item = &[u8]> {
        self.parts.iter().map(|p| p.as_ref())
    }

    /// The whole message in one buffer, for schemes that need it contiguous.
    pub fn to_vec(&self) -> Vec<u8> {
        concat(&self.parts)
    }

    /// Adds a whole other message the provider may have signed instead of
    /// this one (with its own alternatives, if any).
    pub fn or(mut self, alternative: SignedMessage<'r>) -> Self {
        self.alternatives.push(alternative.parts);
        self.alternatives.extend(alternative.alternatives);
        self
    }

    /// Every byte string that counts as signed, as pieces: this message
    /// first, then its alternatives.
    pub fn variants(&self) -> impl Iterator<Item = &[Cow<'r, [u8]>]> {
        std::iter::once(self.parts.as_slice()).chain(self.alternatives.iter().map(Vec::as_slice))
    }
}

/// HMAC-SHA256 of `message` (its pieces in order) under `key`: what a
/// sender computes. For handshakes that answer with a MAC and for signing
/// helpers; verification never compares against it (see
/// [`SignatureClaim::is_signed_by`]).
pub fn hmac_sha256(key: &[u8], message: &[&[u8]]) -> Vec<u8> {
    mac::<Hmac<sha2::Sha256>>(key, message)
}

/// HMAC-SHA512 of `message` (its pieces in order) under `key`, as
/// [`hmac_sha256`].
pub fn hmac_sha512(key: &[u8], message: &[&[u8]]) -> Vec<u8> {
    mac::<Hmac<sha2::Sha512>>(key, message)
}

/// HMAC-SHA1 of `message` (its pieces in order) under `key`, as
/// [`hmac_sha256`].
pub fn hmac_sha1(key: &[u8], message: &[&[u8]]) -> Vec<u8> {
    mac::<Hmac<sha1::Sha1>>(key, message)
}

/// SHA-256 of `secret` followed by `message` (its pieces in order): what a
/// sender of [`Algorithm::SecretPrefixedSha256`] computes, as
/// [`hmac_sha256`].
pub fn secret_prefixed_sha256(secret: &[u8], message: &[&[u8]]) -> Vec<u8> {
    let mut digest = sha2::Sha256::new();
    digest.update(secret);
    for part in message {
        digest.update(part);
    }
    digest.finalize().to_vec()
}

fn mac<M: Mac + hmac::digest::KeyInit>(key: &[u8], message: &[&[u8]]) -> Vec<u8> {
    let mut mac =
        <M as hmac::digest::KeyInit>::new_from_slice(key).expect("HMAC accepts keys of any length");
    for part in message {
        mac.update(part);
    }
    mac.finalize().into_bytes().to_vec()
}

fn concat(parts: &[Cow<'_, [u8]>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        out.extend_from_slice(part);
    }
    out
}

/// Everything an adapter reads from a request before verification: the
/// signed timestamp (if the scheme signs one), the signed bytes and every
/// presented signature.
#[derive(Debug, Clone)]
pub struct SignatureClaim<'r> {
    pub timestamp: Option<i64>,
    pub message: SignedMessage<'r>,
    pub candidates: Vec<Candidate>,
}

impl<'r> SignatureClaim<'r> {
    /// True when `key` produced at least one of the candidates. Every
    /// comparison of secret-derived bytes is constant-time.
    pub fn is_signed_by(&self, key: &Key) -> bool {
        match key {
            Key::Hmac(secret) => {
                self.hmac_matches::<Hmac<sha2::Sha256>>(
                    secret.expose_secret(),
                    Algorithm::HmacSha256,
                ) || self
                    .hmac_matches::<Hmac<sha1::Sha1>>(secret.expose_secret(), Algorithm::HmacSha1)
                    || self.hmac_matches::<Hmac<sha2::Sha512>>(
                        secret.expose_secret(),
                        Algorithm::HmacSha512,
                    )
                    || self.secret_prefixed_sha256_matches(secret.expose_secret())
            }
            Key::Token(token) => {
                // Compare digests so the comparison time does not reveal the token length.
                let expected = sha2::Sha256::digest(token.expose_secret());
                self.of(Algorithm::Token).fold(false, |found, candidate| {
                    let presented = sha2::Sha256::digest(&candidate.bytes);
                    found | bool::from(presented.ct_eq(&expected))
                })
            }
            Key::Ed25519(public) => {
                let mut candidates = self.of(Algorithm::Ed25519).peekable();
                if candidates.peek().is_none() {
                    return false;
                }
                let messages: Vec<Vec<u8>> = self.message.variants().map(concat).collect();
                candidates.any(|candidate| {
                    ed25519_dalek::Signature::from_slice(&candidate.bytes)
                        .map(|sig| {
                            messages
                                .iter()
                                .any(|message| public.verify_strict(message, &sig).is_ok())
                        })
                        .unwrap_or(false)
                })
            }
            Key::Rsa(public) => self.rsa_matches(public),
            Key::EcdsaP256(public) => {
                use p256::ecdsa::signature::Verifier as _;
                let mut candidates = self.of(Algorithm::EcdsaP256Sha256).peekable();
                if candidates.peek().is_none() {
                    return false;
                }
                let messages: Vec<Vec<u8>> = self.message.variants().map(concat).collect();
                candidates.any(|candidate| {
                    p256::ecdsa::DerSignature::from_bytes(&candidate.bytes)
                        .ok()
                        .and_then(|der| p256::ecdsa::Signature::from_der(der.as_bytes()).ok())
                        .or_else(|| p256::ecdsa::Signature::from_slice(&candidate.bytes).ok())
                        .map(|sig| {
                            messages
                                .iter()
                                .any(|message| public.verify(message, &sig).is_ok())
                        })
                        .unwrap_or(false)
                })
            }
        }
    }

    fn rsa_matches(&self, public: &[u8]) -> bool {
        let messages: Vec<Vec<u8>> = self.message.variants().map(concat).collect();
        let check = |algorithm: Algorithm, parameters: &'static ring::signature::RsaParameters| {
            let key = ring::signature::UnparsedPublicKey::new(parameters, public);
            self.of(algorithm).any(|candidate| {
                messages
                    .iter()
                    .any(|message| key.verify(message, &candidate.bytes).is_ok())
            })
        };
        check(
            Algorithm::RsaPkcs1Sha256,
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        ) || check(
            Algorithm::RsaPkcs1Sha1,
            &ring::signature::RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY,
        )
    }

    fn of(&self, algorithm: Algorithm) -> impl Iterator<Item = &Candidate> {
        self.candidates
            .iter()
            .filter(move |c| c.algorithm == algorithm)
    }

    /// As [`Self::hmac_matches`], for [`Algorithm::SecretPrefixedSha256`]:
    /// every digest against every candidate in constant time, no early exit.
    fn secret_prefixed_sha256_matches(&self, secret: &[u8]) -> bool {
        let candidates: Vec<&Candidate> = self.of(Algorithm::SecretPrefixedSha256).collect();
        if candidates.is_empty() {
            return false;
        }
        self.message.variants().fold(false, |found, variant| {
            let parts: Vec<&[u8]> = variant.iter().map(|part| part.as_ref()).collect();
            let expected = secret_prefixed_sha256(secret, &parts);
            candidates.iter().fold(found, |found, candidate| {
                found | bool::from(candidate.bytes.ct_eq(&expected))
            })
        })
    }

    fn hmac_matches<M: Mac + hmac::digest::KeyInit + Clone>(
        &self,
        secret: &[u8],
        algorithm: Algorithm,
    ) -> bool {
        let mut candidates = self.of(algorithm).peekable();
        if candidates.peek().is_none() {
            return false;
        }
        let Ok(keyed) = <M as hmac::digest::KeyInit>::new_from_slice(secret) else {
            return false;
        };
        let candidates: Vec<&Candidate> = candidates.collect();
        // One MAC per key and signed variant, compared against every candidate
        // in constant time; no early exit, so timing does not say which matched.
        self.message.variants().fold(false, |found, variant| {
            let mut mac = keyed.clone();
            for part in variant {
                mac.update(part);
            }
            candidates.iter().fold(found, |found, candidate| {
                found | mac.clone().verify_slice(&candidate.bytes).is_ok()
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::SecretSlice;

    #[test]
    fn hmac_over_pieces_equals_hmac_over_whole() {
        let body = b"{\"id\":1}";
        let claim = SignatureClaim {
            timestamp: None,
            message: SignedMessage::new().owned("123.").borrowed(body),
            candidates: vec![Candidate::new(
                Algorithm::HmacSha256,
                hmac_sha256(b"k", &[b"123.{\"id\":1}"]),
            )],
        };
        assert!(claim.is_signed_by(&Key::Hmac(SecretSlice::from(b"k".to_vec()))));
        assert!(!claim.is_signed_by(&Key::Hmac(SecretSlice::from(b"j".to_vec()))));
    }

    #[test]
    fn a_signature_over_any_alternative_counts() {
        let claim = |signed: &[u8]| SignatureClaim {
            timestamp: None,
            message: SignedMessage::new()
                .owned("https://h/x")
                .or(SignedMessage::new().owned("https://h:443/x")),
            candidates: vec![Candidate::new(
                Algorithm::HmacSha256,
                hmac_sha256(b"k", &[signed]),
            )],
        };
        let key = Key::Hmac(SecretSlice::from(b"k".to_vec()));
        assert!(claim(b"https://h/x").is_signed_by(&key));
        assert!(claim(b"https://h:443/x").is_signed_by(&key));
        assert!(!claim(b"https://h:80/x").is_signed_by(&key));
        let message = SignedMessage::new()
            .owned("a")
            .or(SignedMessage::new().owned("b"));
        assert_eq!(message.to_vec(), b"a");
        assert_eq!(message.variants().count(), 2);
    }

    #[test]
    fn token_must_match_exactly() {
        let claim = |presented: &str| SignatureClaim {
            timestamp: None,
            message: SignedMessage::new(),
            candidates: vec![Candidate::new(Algorithm::Token, presented.into())],
        };
        let key = Key::token_from_utf8("tok").unwrap();
        assert!(claim("tok").is_signed_by(&key));
        assert!(!claim("tok ").is_signed_by(&key));
        assert!(!claim("to").is_signed_by(&key));
    }

    #[test]
    fn a_key_never_checks_candidates_of_another_family() {
        let claim = SignatureClaim {
            timestamp: None,
            message: SignedMessage::new().owned("m"),
            candidates: vec![Candidate::new(Algorithm::Token, b"k".to_vec())],
        };
        assert!(!claim.is_signed_by(&Key::Hmac(SecretSlice::from(b"k".to_vec()))));
    }
}
