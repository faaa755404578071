//! `twilio` — Twilio request signatures (`X-Twilio-Signature`).
//!
//! Follows Twilio's "Webhooks security" guide and its own validator,
//! twilio-python `twilio/request_validator.py` (`RequestValidator.validate`),
//! whose unit-test vectors are reproduced in the tests below; twilio-node's
//! `validateRequest` does the same.
//!
//! - Header: `X-Twilio-Signature` = standard base64 of an HMAC-SHA1, keyed
//!   with the account's auth token as UTF-8 bytes.
//! - Signed bytes for a form POST (`application/x-www-form-urlencoded`): the
//!   public URL Twilio was given, exactly as configured (`public_url`,
//!   required), followed by every body parameter sorted by name (then by
//!   value, for repeated names), each as name immediately followed by value,
//!   percent-decoded. Twilio signs the *decoded parameters*, not the raw body
//!   bytes: two encodings of the same parameters verify alike.
//! - Signed bytes for a JSON body: Twilio appends `bodySHA256=<hex SHA-256 of
//!   the raw body>` to the URL's query and signs only that URL. The adapter
//!   reads the parameter from the request's raw query, refuses the request
//!   (`signature`) unless it equals the body's hash — a public digest, so a
//!   plain comparison — and expects the signature over
//!   `public_url` + (`?` or `&`) + `bodySHA256=<hex>`.
//! - Port variants: Twilio's back end is inconsistent about the default port,
//!   so, like the SDKs, a signature over the URL with its port removed or with
//!   the default port added (443 for https, 80 otherwise) is accepted too.
//! - Tolerance: none. Twilio signs no timestamp.
//! - Event id: header `I-Twilio-Idempotency-Token`, which Twilio sets on a
//!   callback and keeps on its retries of that callback. Without it:
//!   `missing_event_id`. The header is not signed and Twilio signs no
//!   timestamp: a captured request could be replayed under a new token. The
//!   adapter declares the id unsigned, so hookinbox takes the same body within
//!   the (short) redelivery window as the same event; a form re-encoded with
//!   the same parameters verifies too but has another body fingerprint, so
//!   TLS remains the real defence.
//! - Type: for JSON bodies, body `type` when present (Event Streams'
//!   CloudEvents); form callbacks carry no event type, so an endpoint with a
//!   type allowlist ignores them. No object id or version.
//! - Redelivery window: Twilio retries a callback only inside that request's
//!   connection budget (connection overrides: at most 5 retries, total time
//!   at most 15 s); 60 s leaves room for clock and queue delays.

use sha2::Digest;

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

/// Standard base64 of the HMAC-SHA1 of the signed URL (and parameters).
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("X-Twilio-Signature", Algorithm::HmacSha1);

#[derive(Debug)]
pub struct Twilio {
    /// The webhook URL exactly as configured in Twilio: it is part of what
    /// Twilio signs, and a request must never choose it.
    public_url: String,
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    let public_url = settings
        .public_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .ok_or(SettingsError::Missing {
            provider: "twilio",
            field: "public_url",
        })?;
    if host_bounds(public_url).is_none() {
        return Err(SettingsError::Invalid {
            field: "public_url",
            message: "expected the absolute http(s) URL configured in Twilio".into(),
        });
    }
    Ok(Box::new(Twilio {
        public_url: public_url.to_owned(),
    }))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Twilio",
    docs_url: "https://www.twilio.com/docs/usage/webhooks/webhooks-security",
    scheme: "HMAC-SHA1 (auth token), base64, `X-Twilio-Signature`",
    signed_parts: "`{public_url}` then the sorted form parameters (name then value); for JSON, the URL with `bodySHA256=<hex>`",
    id_source: "header `I-Twilio-Idempotency-Token`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("twilio (PyPI)"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Twilio {
    fn name(&self) -> &'static str {
        "twilio"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        60
    }

    /// The signature covers the form parameters (or the body's digest), which hold
    /// the type; the id is the unsigned `I-Twilio-Idempotency-Token` header.
    /// Two encodings of one form verify alike, so copies need not share a
    /// body fingerprint.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: false,
            event_type: true,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let candidate = SIGNATURE.candidate(request.headers)?;
        let signed: Vec<String> = match body_hash_param(request.query) {
            Some(hash) => {
                let presented = hex::decode(&hash)
                    .ok()
                    .filter(|bytes| bytes.len() == 32)
                    .ok_or_else(|| {
                        Refusal::malformed_signature("bodySHA256 in the query is not a hex SHA-256")
                    })?;
                if presented[..] != sha2::Sha256::digest(request.body)[..] {
                    return Err(Refusal::signature(
                        "bodySHA256 in the query does not match the body",
                    ));
                }
                port_variants(&self.public_url)
                    .iter()
                    .map(|url| append_query(url, &format!("bodySHA256={hash}")))
                    .collect()
            }
            None => {
                let params = sorted_params(request.body);
                port_variants(&self.public_url)
                    .into_iter()
                    .map(|url| url + &params)
                    .collect()
            }
        };
        let mut variants = signed.into_iter();
        let first = variants.next().unwrap_or_default();
        let message = variants.fold(SignedMessage::new().owned(first), |message, other| {
            message.or(SignedMessage::new().owned(other))
        });
        Ok(SignatureClaim {
            timestamp: None,
            message,
            candidates: vec![candidate],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let id = request
            .headers
            .get_nonempty("i-twilio-idempotency-token")
            .ok_or_else(|| Refusal::missing_event_id("no I-Twilio-Idempotency-Token header"))?;
        let event_type = body_hash_param(request.query)
            .and_then(|_| serde_json::from_slice::<serde_json::Value>(request.body).ok())
            .and_then(|body| envelope::string_at(&body, "/type"));
        Ok(Outcome::Event(
            Envelope::with_id(id)?.event_type(event_type),
        ))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let request = crate::signer::json_or_form(outgoing.body);
        let (request, signed) = if request.header_value("Content-Type") == Some("application/json")
        {
            let param = format!(
                "bodySHA256={}",
                hex::encode(sha2::Sha256::digest(outgoing.body))
            );
            let signed = append_query(&self.public_url, &param);
            (request.query(param), signed)
        } else {
            (
                request,
                self.public_url.clone() + &sorted_params(outgoing.body),
            )
        };
        Ok(request
            .header("I-Twilio-Idempotency-Token", outgoing.event_id)
            .header(
                SIGNATURE.name,
                SIGNATURE.sign_hmac(secret, &[signed.as_bytes()]),
            ))
    }
}

/// The `bodySHA256` parameter of a raw query string, if any (the first one,
/// as the SDKs read it).
fn body_hash_param(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(name, _)| name == "bodySHA256")
        .map(|(_, value)| value.into_owned())
}

/// The form parameters as Twilio signs them: sorted by name, then value,
/// each name immediately followed by its value.
pub(crate) fn sorted_params(body: &[u8]) -> String {
    let mut params: Vec<(String, String)> = form_urlencoded::parse(body).into_owned().collect();
    params.sort();
    params
        .into_iter()
        .map(|(name, value)| name + &value)
        .collect()
}

/// The byte range of `host[:port]` inside an absolute http(s) URL, after any
/// user info.
pub(crate) fn host_bounds(url: &str) -> Option<(usize, usize)> {
    let scheme_end = url.find("://")?;
    let scheme = &url[..scheme_end];
    if !(scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("http")) {
        return None;
    }
    let start = scheme_end + 3;
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let host_start = url[start..end].rfind('@').map_or(start, |i| start + i + 1);
    (host_start < end).then_some((host_start, end))
}

/// The URL as configured plus the one other form the SDKs also accept: the
/// port removed when it has one, the scheme's default port added when not.
fn port_variants(url: &str) -> Vec<String> {
    let Some((start, end)) = host_bounds(url) else {
        return vec![url.to_owned()];
    };
    let host_port = &url[start..end];
    // A bracketed IPv6 literal has colons of its own; its port follows `]:`.
    let colon = if host_port.starts_with('[') {
        host_port.find("]:").map(|i| i + 1)
    } else {
        host_port.rfind(':')
    };
    let port = colon.filter(|&i| {
        let digits = &host_port[i + 1..];
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    });
    let other = match port {
        Some(i) => format!("{}{}{}", &url[..start], &host_port[..i], &url[end..]),
        None => {
            let default = if url[..start].to_ascii_lowercase().starts_with("https") {
                "443"
            } else {
                "80"
            };
            format!("{}{host_port}:{default}{}", &url[..start], &url[end..])
        }
    };
    if other == url {
        vec![url.to_owned()]
    } else {
        vec![url.to_owned(), other]
    }
}

/// Appends one query parameter the way a URL gains one: before any fragment,
/// after `?` or `&`.
fn append_query(url: &str, param: &str) -> String {
    let (base, fragment) = match url.find('#') {
        Some(i) => url.split_at(i),
        None => (url, ""),
    };
    let separator = match base.find('?') {
        None => "?",
        Some(_) if base.ends_with('?') || base.ends_with('&') => "",
        Some(_) => "&",
    };
    format!("{base}{separator}{param}{fragment}")
}

/// The string Twilio signs for a form POST to `url`. Used by tests and load
/// generators together with [`sign`].
pub fn form_signing_string(url: &str, body: &[u8]) -> String {
    format!("{url}{}", sorted_params(body))
}

/// Signs a string the way Twilio does: base64 HMAC-SHA1 keyed with the auth token.
pub fn sign(auth_token: &str, signing_string: &str) -> String {
    SIGNATURE.sign_hmac(auth_token.as_bytes(), &[signing_string.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verifier};
    use base64::Engine;
    use proptest::prelude::*;

    // The vectors of twilio-python's tests/unit/test_request_validator.py.
    const TOKEN: &str = "12345";
    const URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";
    const FORM: &[u8] = b"CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675309&To=%2B18005551212&Caller=%2B14158675309";
    const FORM_SIGNATURE: &str = "RSOYDt4T1cUTdK1PDd93/VVr8B8=";
    const JSON: &[u8] = br#"{"property": "value", "boolean": true}"#;
    const JSON_HASH: &str = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620";
    const JSON_SIGNATURE: &str = "a9nBmqA0ju/hNViExpshrM61xv4=";

    fn adapter(url: &str) -> Box<dyn Adapter> {
        build(&AdapterSettings {
            public_url: Some(url.into()),
            ..AdapterSettings::default()
        })
        .unwrap()
    }

    fn verifier(url: &str) -> Verifier {
        test_support::verifier(adapter(url), TOKEN)
    }

    fn headers(signature: &str) -> Headers {
        [
            ("X-Twilio-Signature", signature),
            ("I-Twilio-Idempotency-Token", "idem-1"),
        ]
        .into_iter()
        .collect()
    }

    fn verify(
        url: &str,
        signature: &str,
        body: &[u8],
        query: Option<&str>,
    ) -> Result<crate::Verified, Reason> {
        verifier(url)
            .verify(
                &Request::new(&headers(signature), body).with_query(query),
                0,
            )
            .map_err(|failure| failure.refusal.reason)
    }

    #[test]
    fn sdk_form_vector_verifies_and_reads_the_token() {
        let verified = verify(URL, FORM_SIGNATURE, FORM, None).unwrap();
        assert_eq!(verified.event().unwrap().event_id, "idem-1");
        assert_eq!(verified.event().unwrap().event_type, None);
        assert_eq!(sign(TOKEN, &form_signing_string(URL, FORM)), FORM_SIGNATURE);
    }

    #[test]
    fn repeated_names_sort_by_value() {
        let body = b"Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234";
        assert!(verify(URL, "IK+Dwps556ElfBT0I3Rgjkr1wJU=", body, None).is_ok());
    }

    #[test]
    fn sdk_port_variants() {
        let with_port = URL.replace(".com", ".com:1234");
        // Configured with a port, signed without it.
        assert!(verify(&with_port, FORM_SIGNATURE, FORM, None).is_ok());
        // http with an explicit port, signed with it.
        let http_port = with_port.replace("https", "http");
        assert!(verify(&http_port, "Zmvh+3yNM1Phv2jhDCwEM3q5ebU=", FORM, None).is_ok());
        // Configured without a port, signed with the default one.
        assert!(verify(URL, "kvajT1Ptam85bY51eRf/AJRuM3w=", FORM, None).is_ok());
        let http = URL.replace("https", "http");
        assert!(verify(&http, "0ZXoZLH/DfblKGATFgpif+LLRf4=", FORM, None).is_ok());
        // But not another port.
        let other = sign(
            TOKEN,
            &form_signing_string(&URL.replace(".com", ".com:8443"), FORM),
        );
        assert_eq!(
            verify(URL, &other, FORM, None).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn sdk_json_vector_verifies_against_the_body_hash() {
        let query = format!("foo=1&bar=2&bodySHA256={JSON_HASH}");
        let verified = verify(URL, JSON_SIGNATURE, JSON, Some(&query)).unwrap();
        assert_eq!(verified.event().unwrap().event_id, "idem-1");

        let mut tampered = JSON.to_vec();
        tampered[3] ^= 1;
        assert_eq!(
            verify(URL, JSON_SIGNATURE, &tampered, Some(&query)).unwrap_err(),
            Reason::Signature
        );
        let bad_hash = format!("bodySHA256={}", "zz".repeat(32));
        assert_eq!(
            verify(URL, JSON_SIGNATURE, JSON, Some(&bad_hash)).unwrap_err(),
            Reason::MalformedSignature
        );
        // Without the query the body is read as form parameters and nothing matches.
        assert_eq!(
            verify(URL, JSON_SIGNATURE, JSON, None).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn json_bodies_carry_their_type() {
        let body = br#"{"type":"com.twilio.messaging.message.sent"}"#;
        let hash = hex::encode(sha2::Sha256::digest(body));
        let url = "https://h.example/hooks/t";
        let signature = sign(TOKEN, &format!("{url}?bodySHA256={hash}"));
        let verified = verify(url, &signature, body, Some(&format!("bodySHA256={hash}"))).unwrap();
        assert_eq!(
            verified.event().unwrap().event_type.as_deref(),
            Some("com.twilio.messaging.message.sent")
        );
    }

    #[test]
    fn refusals() {
        let changed = b"CallSid=CA1234567890ABCDE&Digits=1235&From=%2B14158675309&To=%2B18005551212&Caller=%2B14158675309";
        assert_eq!(
            verify(URL, FORM_SIGNATURE, changed, None).unwrap_err(),
            Reason::Signature
        );
        let wrong_token = sign("54321", &form_signing_string(URL, FORM));
        assert_eq!(
            verify(URL, &wrong_token, FORM, None).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(&format!("{URL}&x=1"), FORM_SIGNATURE, FORM, None).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(URL, "%%%", FORM, None).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_signature: Headers = [("I-Twilio-Idempotency-Token", "idem-1")]
            .into_iter()
            .collect();
        let err = verifier(URL)
            .verify(&Request::new(&no_signature, FORM), 0)
            .unwrap_err();
        assert_eq!(err.refusal.reason, Reason::MissingSignature);
        let no_token: Headers = [("X-Twilio-Signature", FORM_SIGNATURE)]
            .into_iter()
            .collect();
        let err = verifier(URL)
            .verify(&Request::new(&no_token, FORM), 0)
            .unwrap_err();
        assert_eq!(err.refusal.reason, Reason::MissingEventId);
    }

    #[test]
    fn public_url_is_required_and_absolute() {
        let missing = build(&AdapterSettings::default()).unwrap_err();
        assert_eq!(
            missing,
            SettingsError::Missing {
                provider: "twilio",
                field: "public_url"
            }
        );
        for bad in ["/hooks/twilio", "ftp://h/x", "https://", "https:///x"] {
            let err = build(&AdapterSettings {
                public_url: Some(bad.into()),
                ..AdapterSettings::default()
            })
            .unwrap_err();
            assert!(matches!(err, SettingsError::Invalid { .. }), "{bad}");
        }
    }

    #[test]
    fn url_helpers() {
        assert_eq!(
            port_variants("https://u:p@h.example:8443/x?a=1"),
            [
                "https://u:p@h.example:8443/x?a=1",
                "https://u:p@h.example/x?a=1"
            ]
        );
        assert_eq!(
            port_variants("http://[::1]/x"),
            ["http://[::1]/x", "http://[::1]:80/x"]
        );
        assert_eq!(
            port_variants("https://[::1]:9/x"),
            ["https://[::1]:9/x", "https://[::1]/x"]
        );
        assert_eq!(append_query("https://h/x", "a=1"), "https://h/x?a=1");
        assert_eq!(
            append_query("https://h/x?b=2", "a=1"),
            "https://h/x?b=2&a=1"
        );
        assert_eq!(append_query("https://h/x?#f", "a=1"), "https://h/x?a=1#f");
    }

    fn signed(url: &str, signature: &str, body: &[u8], token: &str) -> bool {
        let adapter = adapter(url);
        let key = adapter.parse_key(token).unwrap();
        adapter
            .claim(&Request::new(&headers(signature), body))
            .is_ok_and(|claim| claim.is_signed_by(&key))
    }

    fn encode(params: &[(String, String)]) -> Vec<u8> {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params)
            .finish()
            .into_bytes()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        // Twilio signs decoded parameters, not raw body bytes (`a+b` and
        // `a%20b` are the same parameter), so the property is stated over
        // parameters: any single-character change to a name or value, to the
        // URL or to the decoded signature makes verification fail.
        #[test]
        fn signed_params_verify_and_single_changes_do_not(
            params in proptest::collection::vec(("[A-Za-z][A-Za-z0-9]{0,8}", "[ -~]{0,12}"), 1..6),
            token in "[A-Za-z0-9]{1,40}",
            path in "[a-z0-9/]{0,16}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let url = format!("https://hooks.example.com/{path}");
            let body = encode(&params);
            let signature = sign(&token, &form_signing_string(&url, &body));
            prop_assert!(signed(&url, &signature, &body, &token));

            // A value grows by one character: the signed text grows with it.
            let mut changed = params.clone();
            let i = at.index(changed.len());
            changed[i].1.push('x');
            prop_assert!(!signed(&url, &signature, &encode(&changed), &token));

            let other_url = format!("{url}x");
            prop_assert!(!signed(&other_url, &signature, &body, &token));

            let mut raw = base64::engine::general_purpose::STANDARD.decode(&signature).unwrap();
            let j = at.index(raw.len());
            raw[j] ^= flip;
            let bad = base64::engine::general_purpose::STANDARD.encode(raw);
            prop_assert!(!signed(&url, &bad, &body, &token));
        }

        // JSON bodies are bound byte for byte through bodySHA256.
        #[test]
        fn json_bodies_are_bound_byte_for_byte(
            body in proptest::collection::vec(any::<u8>(), 1..256),
            token in "[A-Za-z0-9]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let url = "https://hooks.example.com/t";
            let hash = hex::encode(sha2::Sha256::digest(&body));
            let query = format!("bodySHA256={hash}");
            let signature = sign(&token, &format!("{url}?{query}"));
            let key = Key::hmac_from_utf8(&token).unwrap();
            let ok = |body: &[u8], signature: &str| {
                adapter(url)
                    .claim(&Request::new(&headers(signature), body).with_query(Some(&query)))
                    .is_ok_and(|claim| claim.is_signed_by(&key))
            };
            prop_assert!(ok(&body, &signature));
            let mut changed = body.clone();
            changed[at.index(body.len())] ^= flip;
            prop_assert!(!ok(&changed, &signature));
            let mut raw = base64::engine::general_purpose::STANDARD.decode(&signature).unwrap();
            let j = at.index(raw.len());
            raw[j] ^= flip;
            prop_assert!(!ok(&body, &base64::engine::general_purpose::STANDARD.encode(raw)));
        }
    }
}
