//! `contentful` — Contentful webhooks with request verification
//! (`x-contentful-signature`).
//!
//! Follows Contentful's "Webhooks: request verification" and the signing
//! code of its official toolkit, `@contentful/node-apps-toolkit` on npm
//! (`signRequest` / `verifyRequest`), which Contentful points to for it.
//!
//! - Headers: `x-contentful-signature` (hex of a 32-byte HMAC-SHA256),
//!   `x-contentful-timestamp` (unix milliseconds) and
//!   `x-contentful-signed-headers` (the comma-separated names of the headers
//!   the signature covers; it always names itself and the timestamp).
//! - Signed bytes, the toolkit's canonical request: `"POST\n{path}\n{headers}\n{body}"`,
//!   where `{path}` is the path of the webhook URL configured in Contentful
//!   (`public_url`, required — never the path the request names; it must be
//!   a plain path without a query, so its URI-encoding is itself) and
//!   `{headers}` is every listed header present on the request, names
//!   lower-cased, values trimmed, sorted by name, written `name:value` and
//!   joined with `;` — with `x-contentful-timestamp` as the parsed integer and
//!   `x-contentful-signed-headers` rewritten as the sorted names joined with
//!   `,`, exactly as the toolkit rebuilds them. Keyed with the signing secret
//!   (64 characters) as UTF-8 bytes.
//! - Tolerance: 30 s, the toolkit's default time to live; hookinbox applies
//!   it in both directions (the toolkit refuses only old requests).
//! - Event id: header `X-Contentful-Idempotency-Key`, which Contentful
//!   documents as a unique value per fired webhook for dropping duplicates.
//!   It is signed only when Contentful lists it among the signed headers, so
//!   the adapter declares it unsigned: the same body inside the redelivery
//!   window is the same event, whatever key it comes with.
//! - Type: header `X-Contentful-Topic` (`ContentManagement.Entry.publish`),
//!   unsigned likewise. Object id: body `sys.id`. Created: body
//!   `sys.updatedAt` (RFC 3339). No object version is claimed.
//! - Redelivery window: the pages followed here state no retry span; 24
//!   hours are kept, an assumption to revisit when Contentful documents one.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    encoding, Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, ProviderFacts, Refusal,
    Request, SignatureClaim, SignatureCoverage, SignatureHeader, SignedMessage, VectorSource,
};

/// Hex HMAC-SHA256 of the canonical request.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("x-contentful-signature", Algorithm::HmacSha256).with_length(32);
const TIMESTAMP: &str = "x-contentful-timestamp";
const SIGNED_HEADERS: &str = "x-contentful-signed-headers";
/// More listed headers than this is not a request Contentful sent.
const MAX_SIGNED_HEADERS: usize = 32;

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Contentful",
    docs_url: "https://www.contentful.com/developers/docs/webhooks/request-verification/",
    scheme: "HMAC-SHA256, hex, `x-contentful-signature` (+ `x-contentful-timestamp` ms, `x-contentful-signed-headers`)",
    signed_parts: "`POST\\n{public_url path}\\n{signed headers}\\n{body}`",
    id_source: "header `X-Contentful-Idempotency-Key` (unsigned)",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("@contentful/node-apps-toolkit (npm)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug)]
pub struct Contentful {
    /// The path of the webhook URL configured in Contentful.
    path: String,
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    let url = settings
        .public_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .ok_or(SettingsError::Missing {
            provider: "contentful",
            field: "public_url",
        })?;
    let invalid = |message: &str| SettingsError::Invalid {
        field: "public_url",
        message: message.to_owned(),
    };
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| invalid("expected the absolute webhook URL configured in Contentful"))?;
    let path = match rest.find('/') {
        Some(at) => &rest[at..],
        None => "/",
    };
    // encodeURI leaves these alone, so the path is signed as written.
    let plain = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.!~*'();/:@&=+$,".contains(&b));
    if !plain {
        return Err(invalid(
            "the path must be plain (no query, fragment, `%` or non-ASCII): Contentful signs it URI-encoded",
        ));
    }
    Ok(Box::new(Contentful {
        path: path.to_owned(),
    }))
}

impl Adapter for Contentful {
    fn name(&self) -> &'static str {
        "contentful"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(30)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// HMAC over the canonical request, which holds the body; the id and the
    /// topic come from headers that may not be among the signed ones.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: false,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let headers = request.headers;
        let signature = SIGNATURE.value(headers)?;
        let millis_text = required(headers, TIMESTAMP)?;
        let listed = required(headers, SIGNED_HEADERS)?;
        let millis = encoding::unix_seconds(millis_text, TIMESTAMP)?;
        let candidate = SIGNATURE.decode(signature)?;
        let mut names: Vec<String> = listed
            .split(',')
            .map(|name| name.trim().to_ascii_lowercase())
            .filter(|name| !name.is_empty())
            .collect();
        if names.len() > MAX_SIGNED_HEADERS {
            return Err(Refusal::malformed_signature(
                "x-contentful-signed-headers names too many headers",
            ));
        }
        names.sort();
        names.dedup();
        let mut signed: Vec<(String, String)> = names
            .into_iter()
            .filter(|name| name != TIMESTAMP && name != SIGNED_HEADERS)
            .filter_map(|name| {
                let value = headers.get(&name)?.trim().to_owned();
                Some((name, value))
            })
            .collect();
        signed.push((TIMESTAMP.to_owned(), millis.to_string()));
        signed.push((SIGNED_HEADERS.to_owned(), String::new()));
        signed.sort();
        let signed_names = signed
            .iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(",");
        let canonical_headers = signed
            .iter()
            .map(|(name, value)| {
                if name == SIGNED_HEADERS {
                    format!("{name}:{signed_names}")
                } else {
                    format!("{name}:{value}")
                }
            })
            .collect::<Vec<_>>()
            .join(";");
        Ok(SignatureClaim {
            timestamp: Some(millis / 1000),
            message: SignedMessage::new()
                .owned(format!("POST\n{}\n{canonical_headers}\n", self.path))
                .borrowed(request.body),
            candidates: vec![candidate],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let id = request
            .headers
            .get_nonempty("x-contentful-idempotency-key")
            .ok_or_else(|| Refusal::missing_event_id("no X-Contentful-Idempotency-Key header"))?;
        let event = Envelope::with_id(id)?
            .event_type(
                request
                    .headers
                    .get_nonempty("x-contentful-topic")
                    .map(str::to_owned),
            )
            .object_id(envelope::string_at(&body, "/sys/id"))
            .created_at(envelope::rfc3339_at(&body, "/sys/updatedAt"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = String::from_utf8_lossy(crate::signer::shared_secret(&key)?).into_owned();
        let mut request = crate::signer::SignedRequest::json(outgoing.body)
            .header("X-Contentful-Idempotency-Key", outgoing.event_id);
        for (name, value) in sign(&secret, &self.path, outgoing.now * 1000, &[], outgoing.body) {
            request = request.header(&name, value);
        }
        Ok(request)
    }
}

/// Signs a request the way Contentful does, with `signed` the extra headers
/// to cover (lower-case names). Returns the three signature headers. For
/// tests and load generators.
pub fn sign(
    secret: &str,
    path: &str,
    millis: i64,
    signed: &[(&str, &str)],
    body: &[u8],
) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = signed
        .iter()
        .map(|(name, value)| ((*name).to_owned(), value.trim().to_owned()))
        .collect();
    headers.push((TIMESTAMP.to_owned(), millis.to_string()));
    headers.push((SIGNED_HEADERS.to_owned(), String::new()));
    headers.sort();
    let names = headers
        .iter()
        .map(|(name, _)| name.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let canonical = headers
        .iter()
        .map(|(name, value)| {
            if name == SIGNED_HEADERS {
                format!("{name}:{names}")
            } else {
                format!("{name}:{value}")
            }
        })
        .collect::<Vec<_>>()
        .join(";");
    let signature = SIGNATURE.sign_hmac(
        secret.as_bytes(),
        &[format!("POST\n{path}\n{canonical}\n").as_bytes(), body],
    );
    vec![
        ("x-contentful-signature".to_owned(), signature),
        (TIMESTAMP.to_owned(), millis.to_string()),
        (SIGNED_HEADERS.to_owned(), names),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const URL: &str = "https://hooks.example.com/hooks/contentful";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"sys":{"id":"entry-1","type":"Entry","updatedAt":"2023-11-14T22:13:20.000Z"},"fields":{}}"#;

    fn adapter(url: &str) -> Result<Box<dyn Adapter>, SettingsError> {
        build(&AdapterSettings {
            public_url: Some(url.to_owned()),
            ..AdapterSettings::default()
        })
    }

    fn request(signature_headers: Vec<(String, String)>) -> Headers {
        let mut h = Headers::new();
        for (name, value) in signature_headers {
            h.append(&name, value);
        }
        h.append("X-Contentful-Topic", "ContentManagement.Entry.publish");
        h.append("X-Contentful-Idempotency-Key", "idem-1");
        h.append(
            "Content-Type",
            "application/vnd.contentful.management.v1+json",
        );
        h
    }

    fn verify(h: &Headers, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(adapter(URL).unwrap(), SECRET);
        test_support::verify(&verifier, h, body, NOW)
    }

    #[test]
    fn valid_request_reads_the_headers() {
        let signed = [("x-contentful-topic", "ContentManagement.Entry.publish")];
        let h = request(sign(SECRET, "/hooks/contentful", NOW * 1000, &signed, BODY));
        let verified = verify(&h, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "idem-1");
        assert_eq!(
            event.event_type.as_deref(),
            Some("ContentManagement.Entry.publish")
        );
        assert_eq!(event.object_id.as_deref(), Some("entry-1"));
        assert_eq!(event.created_at, Some(NOW));
    }

    #[test]
    fn thirty_second_window_both_directions() {
        test_support::assert_window(NOW, 30, |seconds| {
            let h = request(sign(SECRET, "/hooks/contentful", seconds * 1000, &[], BODY));
            verify(&h, BODY)
        });
    }

    #[test]
    fn signed_headers_and_path_are_covered() {
        let signed = [("x-contentful-topic", "ContentManagement.Entry.publish")];
        // Another topic under the same signature.
        let mut h = Headers::new();
        for (name, value) in sign(SECRET, "/hooks/contentful", NOW * 1000, &signed, BODY) {
            h.append(&name, value);
        }
        h.append("X-Contentful-Topic", "ContentManagement.Entry.delete");
        h.append("X-Contentful-Idempotency-Key", "idem-1");
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::Signature);
        // Signed for another path.
        let h = request(sign(SECRET, "/hooks/other", NOW * 1000, &[], BODY));
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::Signature);
        let mut tampered = BODY.to_vec();
        tampered[10] ^= 1;
        let h = request(sign(SECRET, "/hooks/contentful", NOW * 1000, &[], BODY));
        assert_eq!(verify(&h, &tampered).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn missing_and_malformed() {
        let full = sign(SECRET, "/hooks/contentful", NOW * 1000, &[], BODY);
        for dropped in 0..3 {
            let mut headers = full.clone();
            headers.remove(dropped);
            assert_eq!(
                verify(&request(headers), BODY).unwrap_err(),
                Reason::MissingSignature
            );
        }
        let mut bad = full.clone();
        bad[0].1 = "zz".into();
        assert_eq!(
            verify(&request(bad), BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let mut bad = full;
        bad[1].1 = "soon".into();
        assert_eq!(verify(&request(bad), BODY).unwrap_err(), Reason::Timestamp);
    }

    #[test]
    fn the_public_url_path_must_be_plain() {
        assert!(adapter("https://hooks.example.com/hooks/contentful").is_ok());
        for bad in [
            "hooks.example.com/x",
            "https://hooks.example.com/x?a=1",
            "https://hooks.example.com/caf\u{e9}",
            "https://hooks.example.com/a%20b",
        ] {
            assert!(adapter(bad).is_err(), "{bad}");
        }
    }
}
