//! `plivo` — Plivo callback signatures, version 3 (`X-Plivo-Signature-V3`).
//!
//! Follows Plivo's "Signature validation" page (plivo.com/docs/messaging/
//! concepts/signature-validation) and its SDK's validator, plivo-python
//! `plivo/utils/signature_v3.py` (`validate_v3_signature`), which checked
//! the fixtures.
//!
//! - Headers: `X-Plivo-Signature-V3` = standard base64 of an HMAC-SHA256
//!   (several, comma-separated, while an auth token rotates) and
//!   `X-Plivo-Signature-V3-Nonce`, a random value per request. The key is
//!   the (sub)account's Auth Token as UTF-8 bytes.
//! - Signed bytes: `"{url}.{nonce}"`, where `url` is built from the
//!   endpoint's public URL exactly as given to Plivo (`public_url`,
//!   required; never the request's own): scheme, host and path; then `?`
//!   and the URL's own query parameters sorted by name and value as
//!   `name=value` joined by `&`, a `.` when there were such parameters, and
//!   every form parameter of the body sorted by name and value, each as name
//!   immediately followed by value, percent-decoded. (A body without
//!   parameters adds nothing, not even the `?` when the URL has no query.)
//!   Plivo signs the *decoded parameters*, not the raw bytes: two encodings
//!   of the same parameters verify alike.
//! - Tolerance: none. The nonce is not a time; Plivo signs none.
//! - Event id: **Plivo sends none.** The id is composed of signed
//!   parameters a retry re-sends unchanged: `"{MessageUUID}:{Status}"` for a
//!   message status, `"{MessageUUID}"` for an inbound message,
//!   `"{CallUUID}:{Event}"` (else `"{CallUUID}:{CallStatus}"`) for a call
//!   callback. A natural key, not a hash; without them `missing_event_id`.
//! - Type: `Status`, `Event` or `CallStatus`, else `inbound`. Object id:
//!   `MessageUUID` or `CallUUID`. No created time or object version.
//! - Redelivery window: the page followed here states no retry span; 24
//!   hours are kept, an assumption to revisit when Plivo documents one.

use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    Adapter, Algorithm, Envelope, Key, KeyError, Outcome, ProviderFacts, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, SignedMessage, VectorSource,
};

/// One standard-base64 HMAC-SHA256 per comma-separated item.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("X-Plivo-Signature-V3", Algorithm::HmacSha256).with_length(32);

/// The per-request nonce signed after the URL.
const NONCE: &str = "X-Plivo-Signature-V3-Nonce";

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Plivo",
    docs_url: "https://www.plivo.com/docs/messaging/concepts/signature-validation",
    scheme: "HMAC-SHA256, base64, `X-Plivo-Signature-V3` (comma-separated), nonce in `X-Plivo-Signature-V3-Nonce`",
    signed_parts: "`{public_url with sorted query}{sorted form params}.{nonce}`",
    id_source: "`{MessageUUID}:{Status}` or `{CallUUID}:{Event}`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("plivo (PyPI)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug)]
pub struct Plivo {
    /// `scheme://host/path` of the configured URL, then `?` and its sorted
    /// query when it has one: what every signed URL starts with.
    base: String,
    /// Whether the configured URL has query parameters.
    has_query: bool,
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    let url = settings
        .public_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .ok_or(SettingsError::Missing {
            provider: "plivo",
            field: "public_url",
        })?;
    Ok(Box::new(Plivo::new(url)?))
}

impl Plivo {
    /// The adapter for callbacks to `url`, the URL exactly as configured in
    /// Plivo.
    fn new(url: &str) -> Result<Plivo, SettingsError> {
        if super::twilio::host_bounds(url).is_none() {
            return Err(SettingsError::Invalid {
                field: "public_url",
                message: "expected the absolute http(s) callback URL configured in Plivo".into(),
            });
        }
        let without_fragment = url.split('#').next().unwrap_or(url);
        let (path, query) = without_fragment
            .split_once('?')
            .unwrap_or((without_fragment, ""));
        let mut params: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        params.sort();
        let sorted_query: Vec<String> = params
            .into_iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        let has_query = !sorted_query.is_empty();
        let base = if has_query {
            format!("{path}?{}", sorted_query.join("&"))
        } else {
            path.to_owned()
        };
        Ok(Plivo { base, has_query })
    }

    /// The URL Plivo signs for a POST with `body`.
    fn signed_url(&self, body: &[u8]) -> String {
        let params = super::twilio::sorted_params(body);
        match (params.is_empty(), self.has_query) {
            (true, _) => self.base.clone(),
            (false, true) => format!("{}.{params}", self.base),
            (false, false) => format!("{}?{params}", self.base),
        }
    }
}

impl Adapter for Plivo {
    fn name(&self) -> &'static str {
        "plivo"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// Every form parameter is signed, among them the ids and the status.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let signatures = SIGNATURE.value(request.headers)?;
        let nonce = required(request.headers, NONCE)?;
        let candidates = signatures
            .split(',')
            .map(|item| SIGNATURE.decode(item.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new()
                .owned(format!("{}.{nonce}", self.signed_url(request.body))),
            candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let param = |name: &str| {
            form_urlencoded::parse(request.body)
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
                .filter(|value| !value.is_empty())
        };
        let (event_id, event_type, object_id) = match (param("MessageUUID"), param("CallUUID")) {
            (Some(message), _) => match param("Status") {
                Some(status) => (format!("{message}:{status}"), status, message),
                None => (message.clone(), "inbound".to_owned(), message),
            },
            (None, Some(call)) => match param("Event").or_else(|| param("CallStatus")) {
                Some(event) => (format!("{call}:{event}"), event, call),
                None => return Err(no_id()),
            },
            (None, None) => return Err(no_id()),
        };
        let event = Envelope::with_id(event_id)?
            .event_type(Some(event_type))
            .object_id(Some(object_id));
        Ok(Outcome::Event(event))
    }

    /// The nonce is the event id given (Plivo's is random), so a vector's
    /// nonce can be written again.
    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let signed = format!("{}.{}", self.signed_url(outgoing.body), outgoing.event_id);
        let signature =
            SIGNATURE.sign_hmac(crate::signer::shared_secret(&key)?, &[signed.as_bytes()]);
        Ok(crate::signer::SignedRequest::form(outgoing.body)
            .header(SIGNATURE.name, signature)
            .header(NONCE, outgoing.event_id))
    }
}

fn no_id() -> Refusal {
    Refusal::missing_event_id("no `MessageUUID`, nor a `CallUUID` with its `Event` or `CallStatus`")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const TOKEN: &str = "MzYxNTk0ZWQ4N2M5YjM4ZmQ4NzJmYjlkNWIxMzI2";
    const URL: &str = "https://hooks.example.com/hooks/plivo";
    const NONCE_VALUE: &str = "05429567804466091622";
    const BODY: &[u8] = b"From=14155550100&MessageUUID=2f0b9e4c-0000-4000-8000-000000000001&Status=delivered&To=14155550199&TotalAmount=0.00500&Units=1";

    fn adapter(url: &str) -> Plivo {
        Plivo::new(url).unwrap()
    }

    fn sign_with(token: &str, url: &str, body: &[u8], nonce: &str) -> String {
        let signed = format!("{}.{nonce}", adapter(url).signed_url(body));
        SIGNATURE.sign_hmac(token.as_bytes(), &[signed.as_bytes()])
    }

    fn verify(url: &str, signature: &str, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(
            build(&AdapterSettings {
                public_url: Some(url.into()),
                ..AdapterSettings::default()
            })
            .unwrap(),
            TOKEN,
        );
        let headers: Headers = [(SIGNATURE.name, signature), (NONCE, NONCE_VALUE)]
            .into_iter()
            .collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn the_signed_url_follows_the_sdk() {
        assert_eq!(
            adapter(URL).signed_url(b"b=2&a=1&a=0"),
            "https://hooks.example.com/hooks/plivo?a0a1b2"
        );
        assert_eq!(adapter(URL).signed_url(b""), URL);
        let with_query = "https://hooks.example.com/hooks/plivo?z=9&tenant=acme%20co";
        assert_eq!(
            adapter(with_query).signed_url(b"b=2"),
            "https://hooks.example.com/hooks/plivo?tenant=acme co&z=9.b2"
        );
        assert_eq!(
            adapter(with_query).signed_url(b""),
            "https://hooks.example.com/hooks/plivo?tenant=acme co&z=9"
        );
    }

    #[test]
    fn valid_request_reads_the_composed_id() {
        let verified = verify(URL, &sign_with(TOKEN, URL, BODY, NONCE_VALUE), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "2f0b9e4c-0000-4000-8000-000000000001:delivered"
        );
        assert_eq!(event.event_type.as_deref(), Some("delivered"));
        let call = b"CallUUID=c-1&Event=Hangup&CallStatus=completed";
        let verified = verify(URL, &sign_with(TOKEN, URL, call, NONCE_VALUE), call).unwrap();
        assert_eq!(verified.event().unwrap().event_id, "c-1:Hangup");
        // Reordered parameters are the same signed parameters.
        let reordered = b"Status=delivered&To=14155550199&TotalAmount=0.00500&Units=1&From=14155550100&MessageUUID=2f0b9e4c-0000-4000-8000-000000000001";
        assert!(verify(URL, &sign_with(TOKEN, URL, BODY, NONCE_VALUE), reordered).is_ok());
    }

    #[test]
    fn refusals() {
        let good = sign_with(TOKEN, URL, BODY, NONCE_VALUE);
        let mut tampered = BODY.to_vec();
        tampered[110] ^= 1;
        assert_eq!(
            verify(URL, &good, &tampered).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(
                URL,
                &sign_with("another-token", URL, BODY, NONCE_VALUE),
                BODY
            )
            .unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(URL, &sign_with(TOKEN, URL, BODY, "other-nonce"), BODY).unwrap_err(),
            Reason::Signature
        );
        let other = "https://hooks.example.com/hooks/other";
        assert_eq!(
            verify(URL, &sign_with(TOKEN, other, BODY, NONCE_VALUE), BODY).unwrap_err(),
            Reason::Signature
        );
        let rotated = format!("{},{good}", sign_with("old-token", URL, BODY, NONCE_VALUE));
        assert!(verify(URL, &rotated, BODY).is_ok());
        assert_eq!(verify(URL, "", BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify(URL, "%%%", BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        let no_id = b"To=14155550199&Status=delivered";
        assert_eq!(
            verify(URL, &sign_with(TOKEN, URL, no_id, NONCE_VALUE), no_id).unwrap_err(),
            Reason::MissingEventId
        );
    }

    #[test]
    fn the_public_url_is_required_and_absolute() {
        for url in [None, Some("hooks.example.com/plivo")] {
            assert!(build(&AdapterSettings {
                public_url: url.map(str::to_owned),
                ..AdapterSettings::default()
            })
            .is_err());
        }
    }

    fn signs(body: &[u8], signature: &str) -> bool {
        let headers: Headers = [(SIGNATURE.name, signature), (NONCE, NONCE_VALUE)]
            .into_iter()
            .collect();
        let key = adapter(URL).parse_key(TOKEN).unwrap();
        adapter(URL)
            .claim(&Request::new(&headers, body))
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

        // Plivo signs decoded parameters, not raw body bytes (`a+b` and
        // `a%20b` are one parameter; `a=b` and `a&b=` concatenate alike), so
        // the property is stated over parameters: any single-character
        // change to a value, or any single byte of the decoded signature,
        // makes verification fail.
        #[test]
        fn single_changes_never_verify(
            params in proptest::collection::vec(("[A-Za-z][A-Za-z0-9]{0,8}", "[A-Za-z0-9]{1,12}"), 1..6),
            at in any::<proptest::sample::Index>(),
            flip in 1u8..,
        ) {
            let body = encode(&params);
            let signature = sign_with(TOKEN, URL, &body, NONCE_VALUE);
            prop_assert!(signs(&body, &signature));

            let mut changed = params.clone();
            let i = at.index(changed.len());
            let value = &mut changed[i].1;
            let j = at.index(value.len());
            let replaced = if value.as_bytes()[j] == b'x' { "y" } else { "x" };
            value.replace_range(j..=j, replaced);
            prop_assert!(!signs(&encode(&changed), &signature));

            use base64::Engine;
            let engine = base64::engine::general_purpose::STANDARD;
            let mut raw = engine.decode(&signature).unwrap();
            let k = at.index(raw.len());
            raw[k] ^= flip;
            prop_assert!(!signs(&body, &engine.encode(raw)));
        }
    }
}
