//! A signature carried in one request header — `X-Shopify-Hmac-Sha256:
//! <base64>`, `X-Hub-Signature-256: sha256=<hex>` — and the other headers a
//! scheme signs beside it (a timestamp, a message id).
//!
//! Most providers present their signature this way and differ only in the
//! header's name, a fixed prefix, the encoding, the algorithm and whether the
//! length is checked before verification. So a provider declares those facts
//! once, as a [`SignatureHeader`] constant, and reading the header — with the
//! refusals of the closed set, spelled alike for every provider — happens
//! here: an absent header is `missing_signature`, a missing prefix or an
//! undecodable value `malformed_signature`, a timestamp that is not an
//! integer `timestamp`. The same constant writes the header back for tests
//! and load generators ([`SignatureHeader::sign_hmac`]), so what a sender
//! writes and what the adapter reads cannot drift apart.

use base64::Engine;
use serde::Deserialize;

use crate::signature::{hmac_sha1, hmac_sha256, hmac_sha512};
use crate::{
    encoding, Algorithm, Candidate, Headers, Refusal, Request, SignatureClaim, SignedMessage,
};

/// How a signature is written in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignatureEncoding {
    /// Hex, either case.
    Hex,
    /// Standard base64, padding optional.
    Base64,
}

impl SignatureEncoding {
    fn name(self) -> &'static str {
        match self {
            SignatureEncoding::Hex => "hex",
            SignatureEncoding::Base64 => "base64",
        }
    }
}

/// Where and how a scheme presents its signature: one header, optionally
/// after a fixed prefix, hex or base64, of one algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignatureHeader<'a> {
    /// The header's name as the provider documents it. Lookups ignore case;
    /// refusal details use this spelling.
    pub name: &'a str,
    /// Text the value must start with (`sha256=`), when the scheme has one.
    pub prefix: Option<&'a str>,
    pub encoding: SignatureEncoding,
    pub algorithm: Algorithm,
    /// The exact decoded length, for schemes that refuse any other length as
    /// malformed; without it a signature of the wrong length simply never
    /// matches (`signature`).
    pub length: Option<usize>,
}

impl<'a> SignatureHeader<'a> {
    /// A header holding the hex signature and nothing else.
    pub const fn hex(name: &'a str, algorithm: Algorithm) -> Self {
        SignatureHeader {
            name,
            prefix: None,
            encoding: SignatureEncoding::Hex,
            algorithm,
            length: None,
        }
    }

    /// A header holding the standard-base64 signature and nothing else.
    pub const fn base64(name: &'a str, algorithm: Algorithm) -> Self {
        SignatureHeader {
            encoding: SignatureEncoding::Base64,
            ..Self::hex(name, algorithm)
        }
    }

    /// The same header with a required prefix before the encoded signature.
    pub const fn with_prefix(self, prefix: &'a str) -> Self {
        SignatureHeader {
            prefix: Some(prefix),
            ..self
        }
    }

    /// The same header with the decoded length checked before verification.
    pub const fn with_length(self, length: usize) -> Self {
        SignatureHeader {
            length: Some(length),
            ..self
        }
    }

    /// The header's value, trimmed; absent or blank is `missing_signature`.
    pub fn value<'h>(&self, headers: &'h Headers) -> Result<&'h str, Refusal> {
        required(headers, self.name)
    }

    /// Decodes a value of this header into the presented signature: the
    /// prefix must be there, the rest must decode (to the declared length).
    pub fn decode(&self, value: &str) -> Result<Candidate, Refusal> {
        let encoded = match self.prefix {
            Some(prefix) => value.strip_prefix(prefix).ok_or_else(|| {
                Refusal::malformed_signature(format!(
                    "{} does not start with `{prefix}`",
                    self.name
                ))
            })?,
            None => value,
        };
        let bytes = match self.encoding {
            SignatureEncoding::Hex => encoding::hex_signature(encoded),
            SignatureEncoding::Base64 => encoding::base64_signature(encoded),
        };
        match (bytes, self.length) {
            (Some(bytes), None) => Ok(Candidate::new(self.algorithm, bytes)),
            (Some(bytes), Some(length)) if bytes.len() == length => {
                Ok(Candidate::new(self.algorithm, bytes))
            }
            (_, Some(length)) => Err(Refusal::malformed_signature(format!(
                "{} is not a {length}-byte {} signature",
                self.name,
                self.encoding.name()
            ))),
            (None, None) => Err(Refusal::malformed_signature(match self.prefix {
                Some(prefix) => format!(
                    "{} is not {} after `{prefix}`",
                    self.name,
                    self.encoding.name()
                ),
                None => format!("{} is not {}", self.name, self.encoding.name()),
            })),
        }
    }

    /// Reads and decodes the header.
    pub fn candidate(&self, headers: &Headers) -> Result<Candidate, Refusal> {
        self.decode(self.value(headers)?)
    }

    /// The whole claim of a scheme that signs the raw body and nothing else,
    /// with no timestamp.
    pub fn body_claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new().borrowed(request.body),
            candidates: vec![self.candidate(request.headers)?],
        })
    }

    /// The whole claim of a scheme that signs a timestamp header of integer
    /// unix seconds and the raw body: `before_body` writes what the provider
    /// puts before the body, from the timestamp as sent or its seconds
    /// (Slack: `"v0:{seconds}:"`). Both headers must be present
    /// (`missing_signature`), then the timestamp must be an integer
    /// (`timestamp`), then the signature well-formed (`malformed_signature`).
    pub fn timestamped_claim<'r>(
        &self,
        request: &Request<'r>,
        timestamp_header: &str,
        before_body: impl FnOnce(SignedTimestamp<'_>) -> String,
    ) -> Result<SignatureClaim<'r>, Refusal> {
        let (candidate, timestamp) = self.with_unix_timestamp(request.headers, timestamp_header)?;
        Ok(SignatureClaim {
            timestamp: Some(timestamp.seconds),
            message: SignedMessage::new()
                .owned(before_body(timestamp))
                .borrowed(request.body),
            candidates: vec![candidate],
        })
    }

    /// Reads this signature and a timestamp header of integer unix seconds,
    /// in the order of [`SignatureHeader::timestamped_claim`].
    fn with_unix_timestamp<'h>(
        &self,
        headers: &'h Headers,
        timestamp_header: &str,
    ) -> Result<(Candidate, SignedTimestamp<'h>), Refusal> {
        let value = self.value(headers)?;
        let timestamp = unix_timestamp(headers, timestamp_header)?;
        Ok((self.decode(value)?, timestamp))
    }

    /// The header value a sender writes for `signature`: the prefix, then
    /// the encoded bytes (lower-case hex, padded base64).
    pub fn encode(&self, signature: &[u8]) -> String {
        let encoded = match self.encoding {
            SignatureEncoding::Hex => hex::encode(signature),
            SignatureEncoding::Base64 => {
                base64::engine::general_purpose::STANDARD.encode(signature)
            }
        };
        format!("{}{encoded}", self.prefix.unwrap_or_default())
    }

    /// Signs like the provider's sender: the HMAC of `message` (its pieces
    /// in order) keyed with `secret`, written as this header carries it. For
    /// tests, examples and load generators.
    ///
    /// # Panics
    /// When the header's algorithm is not an HMAC: a programming error.
    pub fn sign_hmac(&self, secret: &[u8], message: &[&[u8]]) -> String {
        let mac = match self.algorithm {
            Algorithm::HmacSha256 => hmac_sha256(secret, message),
            Algorithm::HmacSha1 => hmac_sha1(secret, message),
            Algorithm::HmacSha512 => hmac_sha512(secret, message),
            Algorithm::SecretPrefixedSha256 => {
                crate::signature::secret_prefixed_sha256(secret, message)
            }
            other => panic!("{} carries {other:?} signatures, not an HMAC", self.name),
        };
        self.encode(&mac)
    }
}

/// A header the signed bytes need beside the signature (a timestamp, a
/// message id), trimmed. Without it the signed bytes cannot be rebuilt, so its
/// absence is `missing_signature`.
pub fn required<'h>(headers: &'h Headers, name: &str) -> Result<&'h str, Refusal> {
    headers
        .get_nonempty(name)
        .ok_or_else(|| Refusal::missing_signature(format!("no {name} header")))
}

/// A signed timestamp as it came: the header text (some schemes sign it as
/// sent) and the unix seconds it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignedTimestamp<'h> {
    pub text: &'h str,
    pub seconds: i64,
}

/// A timestamp header of integer unix seconds: absent is
/// `missing_signature`, anything but an integer is `timestamp`.
pub fn unix_timestamp<'h>(
    headers: &'h Headers,
    name: &str,
) -> Result<SignedTimestamp<'h>, Refusal> {
    let text = required(headers, name)?;
    Ok(SignedTimestamp {
        text,
        seconds: encoding::unix_seconds(text, name)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Reason;

    const PREFIXED: SignatureHeader<'static> =
        SignatureHeader::hex("X-Sig", Algorithm::HmacSha256).with_prefix("sha256=");

    fn headers(pairs: &[(&str, &str)]) -> Headers {
        pairs.iter().copied().collect()
    }

    fn reason(result: Result<Candidate, Refusal>) -> Reason {
        result.unwrap_err().reason
    }

    #[test]
    fn reads_prefix_and_encoding() {
        let candidate = PREFIXED.candidate(&headers(&[("x-sig", " sha256=0aFF ")]));
        assert_eq!(
            candidate.unwrap(),
            Candidate::new(Algorithm::HmacSha256, vec![0x0a, 0xff])
        );
        let base64 = SignatureHeader::base64("X-Sig", Algorithm::HmacSha1);
        assert_eq!(
            base64
                .candidate(&headers(&[("X-Sig", "AAE")]))
                .unwrap()
                .bytes,
            [0, 1]
        );
    }

    #[test]
    fn refusals_follow_the_closed_set() {
        assert_eq!(
            reason(PREFIXED.candidate(&headers(&[]))),
            Reason::MissingSignature
        );
        assert_eq!(
            reason(PREFIXED.candidate(&headers(&[("X-Sig", "  ")]))),
            Reason::MissingSignature
        );
        for bad in ["0aff", "sha1=0aff", "sha256=zz"] {
            assert_eq!(
                reason(PREFIXED.candidate(&headers(&[("X-Sig", bad)]))),
                Reason::MalformedSignature,
                "{bad}"
            );
        }
        let sized = PREFIXED.with_length(2);
        assert!(sized.decode("sha256=0aff").is_ok());
        assert_eq!(
            reason(sized.decode("sha256=0a")),
            Reason::MalformedSignature
        );
        // Without a declared length, a short signature is read and simply never matches.
        assert!(PREFIXED.decode("sha256=0a").is_ok());
    }

    #[test]
    fn details_name_the_header() {
        let detail = |result: Result<Candidate, Refusal>| result.unwrap_err().detail;
        assert_eq!(detail(PREFIXED.candidate(&headers(&[]))), "no X-Sig header");
        assert_eq!(
            detail(PREFIXED.decode("0aff")),
            "X-Sig does not start with `sha256=`"
        );
        assert_eq!(
            detail(PREFIXED.decode("sha256=zz")),
            "X-Sig is not hex after `sha256=`"
        );
        assert_eq!(
            detail(PREFIXED.with_length(32).decode("sha256=zz")),
            "X-Sig is not a 32-byte hex signature"
        );
    }

    #[test]
    fn timestamps_are_checked_after_presence_and_before_the_signature() {
        let read = |pairs: &[(&str, &str)]| {
            PREFIXED
                .with_unix_timestamp(&headers(pairs), "X-Ts")
                .map(|(_, ts)| ts.seconds)
                .map_err(|refusal| refusal.reason)
        };
        assert_eq!(read(&[("X-Sig", "sha256=00"), ("X-Ts", "17")]), Ok(17));
        assert_eq!(read(&[("X-Ts", "17")]), Err(Reason::MissingSignature));
        assert_eq!(read(&[("X-Sig", "zz")]), Err(Reason::MissingSignature));
        assert_eq!(
            read(&[("X-Sig", "zz"), ("X-Ts", "1.5")]),
            Err(Reason::Timestamp)
        );
        assert_eq!(
            read(&[("X-Sig", "zz"), ("X-Ts", "17")]),
            Err(Reason::MalformedSignature)
        );
    }

    #[test]
    fn what_a_sender_writes_reads_back() {
        let signed = PREFIXED.sign_hmac(b"key", &[b"a", b"b"]);
        assert!(signed.starts_with("sha256="));
        assert_eq!(
            PREFIXED.decode(&signed).unwrap().bytes,
            hmac_sha256(b"key", &[b"ab"])
        );
        let base64 = SignatureHeader::base64("X-Sig", Algorithm::HmacSha1);
        assert_eq!(base64.encode(&[0, 1]), "AAE=");
        assert_eq!(base64.sign_hmac(b"k", &[b"m"]).len(), 28);
    }
}
