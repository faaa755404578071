//! A strict reader (and, under the `sign` feature, writer) of compact JWS
//! tokens signed with HS256 — `base64url(header).base64url(claims).base64url(mac)` —
//! as Netlify (`X-Webhook-Signature`), Vonage and monday.com
//! (`Authorization`) send them.
//!
//! Why not a JWT library: every one of these providers signs with one
//! algorithm, HS256, and the crate already holds the HMAC and the
//! constant-time comparison ([`crate::SignatureClaim::is_signed_by`]). What a
//! JWT library adds is algorithm negotiation, the source of the classic JWT
//! flaws (`alg: none`, an HMAC keyed with an RSA public key). So this reader
//! only splits and decodes; the algorithm is pinned by the adapter, never
//! taken from the token:
//!
//! - exactly three segments of unpadded base64url (RFC 7515 §7.1); anything
//!   else is `malformed_signature`;
//! - a header that is a JSON object whose `alg` is the pinned one, with no
//!   `crit` (no extension is understood, so none may be required), and a
//!   `typ`, when present, of `JWT`; `alg: none` or any other algorithm is
//!   refused as `malformed_signature`, before any key is tried;
//! - claims that are a JSON object;
//! - a 32-byte MAC, presented as an HMAC-SHA256 candidate over the ASCII
//!   `header.claims` exactly as received.
//!
//! The claims are read before verification only to rebuild what was signed
//! (a body digest, the issue time); the verifier checks the MAC before any
//! of them is trusted.

use base64::Engine;
use serde_json::{Map, Value};

use crate::{Algorithm, Candidate, Refusal, SignatureClaim, SignedMessage};

/// The longest token read: far above what these providers send (a few
/// hundred bytes), far below a header that would cost anything to decode.
pub const MAX_TOKEN_LEN: usize = 8 * 1024;

/// The one algorithm the providers of this crate sign JWS tokens with.
pub const HS256: &str = "HS256";

/// One compact JWS, split and decoded, not yet verified.
#[derive(Debug, Clone)]
pub struct CompactJws {
    /// `header.claims` exactly as received: the bytes the MAC covers.
    signing_input: String,
    claims: Map<String, Value>,
    mac: Vec<u8>,
}

impl CompactJws {
    /// Reads `token` (named `what` in refusals) signed with the pinned
    /// HS256.
    pub fn read_hs256(token: &str, what: &str) -> Result<CompactJws, Refusal> {
        let malformed = |why: &str| Refusal::malformed_signature(format!("{what}: {why}"));
        let token = token.trim();
        if token.len() > MAX_TOKEN_LEN {
            return Err(malformed("the token is too long"));
        }
        let mut segments = token.split('.');
        let (Some(header), Some(claims), Some(mac), None) = (
            segments.next(),
            segments.next(),
            segments.next(),
            segments.next(),
        ) else {
            return Err(malformed("not a compact JWS of three segments"));
        };
        let header =
            decode_object(header).ok_or_else(|| malformed("the header is not a JSON object"))?;
        match header.get("alg").and_then(Value::as_str) {
            Some(HS256) => {}
            Some(_) => return Err(malformed("the token is not signed with HS256")),
            None => return Err(malformed("the header names no `alg`")),
        }
        if header.contains_key("crit") {
            return Err(malformed("the header requires extensions (`crit`)"));
        }
        if let Some(typ) = header.get("typ") {
            if !typ.as_str().is_some_and(|t| t.eq_ignore_ascii_case("JWT")) {
                return Err(malformed("the header's `typ` is not JWT"));
            }
        }
        let claims_object =
            decode_object(claims).ok_or_else(|| malformed("the claims are not a JSON object"))?;
        let mac = decode_segment(mac)
            .filter(|mac| mac.len() == 32)
            .ok_or_else(|| malformed("the signature is not a 32-byte HMAC-SHA256"))?;
        let signed_len = token.len() - token.rsplit('.').next().map_or(0, str::len) - 1;
        Ok(CompactJws {
            signing_input: token[..signed_len].to_owned(),
            claims: claims_object,
            mac,
        })
    }

    /// The claims, not yet verified.
    pub fn claims(&self) -> &Map<String, Value> {
        &self.claims
    }

    /// A string claim.
    pub fn string_claim(&self, name: &str) -> Option<&str> {
        self.claims.get(name).and_then(Value::as_str)
    }

    /// An integer claim (a JSON number without fraction, as RFC 7519's
    /// NumericDate is written by these senders).
    pub fn integer_claim(&self, name: &str) -> Option<i64> {
        self.claims.get(name).and_then(Value::as_i64)
    }

    /// The claim the verifier checks: the MAC over `header.claims`, with the
    /// signed time an adapter read from the claims.
    pub fn into_claim<'r>(self, timestamp: Option<i64>) -> SignatureClaim<'r> {
        SignatureClaim {
            timestamp,
            message: SignedMessage::new().owned(self.signing_input.into_bytes()),
            candidates: vec![Candidate::new(Algorithm::HmacSha256, self.mac)],
        }
    }
}

/// A token a sender writes: the header `{"alg":"HS256","typ":"JWT"}`, the
/// claims as compact JSON, HMAC-SHA256 under `key`. Callers insert the
/// claims in key order, so the bytes are the same whether or not
/// `serde_json` keeps insertion order in this build.
#[cfg(feature = "sign")]
pub fn sign_hs256(key: &[u8], claims: &Map<String, Value>) -> String {
    let encode = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let header = encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let claims = encode(Value::Object(claims.clone()).to_string().as_bytes());
    let signing_input = format!("{header}.{claims}");
    let mac = crate::signature::hmac_sha256(key, &[signing_input.as_bytes()]);
    format!("{signing_input}.{}", encode(&mac))
}

/// Unpadded base64url, and nothing else (no padding, no standard alphabet).
fn decode_segment(segment: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(segment)
        .ok()
}

fn decode_object(segment: &str) -> Option<Map<String, Value>> {
    match serde_json::from_slice(&decode_segment(segment)?).ok()? {
        Value::Object(object) => Some(object),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Key, Reason};

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    fn token(header: &str, claims: &str, key: &[u8]) -> String {
        let input = format!("{}.{}", b64(header.as_bytes()), b64(claims.as_bytes()));
        let mac = crate::signature::hmac_sha256(key, &[input.as_bytes()]);
        format!("{input}.{}", b64(&mac))
    }

    fn reason(token: &str) -> Reason {
        CompactJws::read_hs256(token, "X-Test").unwrap_err().reason
    }

    /// RFC 7515 appendix A.1's HS256 example, whose key is given as a JWK.
    #[test]
    fn rfc7515_example_verifies() {
        let token = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let key = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")
            .unwrap();
        let jws = CompactJws::read_hs256(token, "t").unwrap();
        assert_eq!(jws.string_claim("iss"), Some("joe"));
        assert_eq!(jws.integer_claim("exp"), Some(1_300_819_380));
        let claim = jws.into_claim(None);
        assert!(claim.is_signed_by(&Key::Hmac(key.clone().into())));
        let mut other = key;
        other[0] ^= 1;
        assert!(!claim.is_signed_by(&Key::Hmac(other.into())));
    }

    #[test]
    fn only_the_pinned_algorithm_is_read() {
        let none = format!(
            "{}.{}.",
            b64(br#"{"alg":"none"}"#),
            b64(br#"{"iss":"netlify"}"#)
        );
        assert_eq!(reason(&none), Reason::MalformedSignature);
        for header in [
            r#"{"alg":"HS512"}"#,
            r#"{"alg":"RS256"}"#,
            r#"{"alg":"hs256"}"#,
            r#"{"typ":"JWT"}"#,
            r#"{"alg":"HS256","crit":["b64"],"b64":false}"#,
            r#"{"alg":"HS256","typ":"JOSE+JSON"}"#,
            r#"["HS256"]"#,
        ] {
            assert_eq!(
                reason(&token(header, "{}", b"k")),
                Reason::MalformedSignature,
                "{header}"
            );
        }
        assert!(CompactJws::read_hs256(&token(r#"{"alg":"HS256"}"#, "{}", b"k"), "t").is_ok());
    }

    #[test]
    fn the_shape_is_strict() {
        let good = token(r#"{"alg":"HS256","typ":"JWT"}"#, r#"{"a":1}"#, b"k");
        assert!(CompactJws::read_hs256(&good, "t").is_ok());
        let padded = format!("{good}=");
        let extra = format!("{good}.AAAA");
        let (input, mac) = good.rsplit_once('.').unwrap();
        let short_mac = format!("{input}.{}", &mac[..20]);
        let standard_alphabet = good.replace('-', "+").replace('_', "/");
        for bad in [
            "",
            "a.b",
            padded.as_str(),
            extra.as_str(),
            short_mac.as_str(),
            "eyJhbGciOiJIUzI1NiJ9.W10.AAAA",
        ] {
            assert_eq!(reason(bad), Reason::MalformedSignature, "{bad}");
        }
        if standard_alphabet != good {
            assert_eq!(reason(&standard_alphabet), Reason::MalformedSignature);
        }
        assert_eq!(
            reason(&"a".repeat(MAX_TOKEN_LEN + 1)),
            Reason::MalformedSignature
        );
    }

    #[test]
    fn the_mac_covers_header_and_claims_as_received() {
        let good = token(r#"{"alg":"HS256"}"#, r#"{"sha256":"ab"}"#, b"secret");
        let key = Key::hmac_from_utf8("secret").unwrap();
        assert!(CompactJws::read_hs256(&good, "t")
            .unwrap()
            .into_claim(None)
            .is_signed_by(&key));
        // The same claims, written with a space: another signing input.
        let respaced = format!(
            "{}.{}.{}",
            b64(br#"{"alg":"HS256"}"#),
            b64(br#"{"sha256": "ab"}"#),
            good.rsplit('.').next().unwrap()
        );
        assert!(!CompactJws::read_hs256(&respaced, "t")
            .unwrap()
            .into_claim(None)
            .is_signed_by(&key));
    }

    #[cfg(feature = "sign")]
    #[test]
    fn what_a_sender_writes_reads_back() {
        let mut claims = Map::new();
        claims.insert("iss".into(), "netlify".into());
        claims.insert("sha256".into(), "00".into());
        let written = sign_hs256(b"secret", &claims);
        assert!(written.starts_with("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."));
        let read = CompactJws::read_hs256(&written, "t").unwrap();
        assert_eq!(read.claims(), &claims);
        assert!(read
            .into_claim(None)
            .is_signed_by(&Key::hmac_from_utf8("secret").unwrap()));
    }
}
