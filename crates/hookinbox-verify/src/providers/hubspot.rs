//! `hubspot` — HubSpot webhook signatures, version 3 (`X-HubSpot-Signature-v3`).
//!
//! Follows HubSpot's "Validating requests" page
//! (developers.hubspot.com/docs/api/webhooks/validating-requests, "Validate
//! the v3 request signature") and the official `hubspot-api-client` SDK's
//! `utils.signature.Signature` (`get_signature` with `signature_version="v3"`).
//!
//! - Headers: `X-HubSpot-Signature-v3` (standard base64) and
//!   `X-HubSpot-Request-Timestamp` (integer unix *milliseconds*).
//! - Signed bytes: `"{method}{uri}{raw body}{timestamp}"`: the method is
//!   `POST` (the only one this endpoint takes for events); the URI is the
//!   URL HubSpot was given — `public_url`, required, never taken from the
//!   request — with the request's query appended, and the escapes HubSpot
//!   lists decoded (`%3A` `:`, `%2F` `/`, `%3F` `?`, `%40` `@`, `%21` `!`,
//!   `%24` `$`, `%27` `'`, `%28` `(`, `%29` `)`, `%2A` `*`, `%2C` `,`,
//!   `%3B` `;`); the timestamp header as sent. HMAC-SHA256 keyed with the
//!   app's client secret as UTF-8 bytes.
//! - Tolerance: 300 s (HubSpot: reject timestamps older than five minutes,
//!   the SDK's `MAX_ALLOWED_TIMESTAMP`), applied in both directions;
//!   milliseconds floored to seconds.
//! - Batches: one request carries a JSON array of up to 100 events, each with
//!   its own `eventId`. The inbox stores the whole request as **one** event.
//! - Event id: the only event's `eventId`, or for several
//!   `"{first eventId}..{last eventId}/{count}"`. Signed. `attemptNumber`
//!   changes on each retry, so a retried body differs from the first; the
//!   id, made of the events' own ids, does not.
//! - Type: `subscriptionType` (`contact.propertyChange`) when every event of
//!   the batch shares it, `batch` otherwise. Object id: `objectId` when
//!   every event shares it. Created: the first event's `occurredAt`
//!   (milliseconds). No object version.
//! - Redelivery window: a failed notification is retried up to 10 times over
//!   24 hours. One day is kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    encoding, Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader, SignedMessage,
};

/// Standard base64 of the HMAC-SHA256.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::base64("X-HubSpot-Signature-v3", Algorithm::HmacSha256);

/// The header carrying the signed timestamp (milliseconds).
const TIMESTAMP: &str = "X-HubSpot-Request-Timestamp";

/// The escapes HubSpot decodes in the URI before signing.
const DECODED: [(&str, &str); 12] = [
    ("%3A", ":"),
    ("%2F", "/"),
    ("%3F", "?"),
    ("%40", "@"),
    ("%21", "!"),
    ("%24", "$"),
    ("%27", "'"),
    ("%28", "("),
    ("%29", ")"),
    ("%2A", "*"),
    ("%2C", ","),
    ("%3B", ";"),
];

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "HubSpot",
    docs_url: "https://developers.hubspot.com/docs/api/webhooks/validating-requests",
    scheme: "HMAC-SHA256, base64, `X-HubSpot-Signature-v3`",
    signed_parts: "`POST{public_url}[?{query}]{body}{X-HubSpot-Request-Timestamp}`",
    id_source: "body `eventId` (several: `{first}..{last}/{count}`)",
    handshake: None,
    batch: Some("one request (up to 100 events) stored as one event"),
    vectors: VectorSource::OfficialSdk("hubspot-api-client (PyPI)"),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug)]
pub struct Hubspot {
    /// The target URL configured in HubSpot.
    public_url: String,
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    let url = settings
        .public_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .ok_or(SettingsError::Missing {
            provider: "hubspot",
            field: "public_url",
        })?;
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(SettingsError::Invalid {
            field: "public_url",
            message: "expected the absolute target URL configured in HubSpot".into(),
        });
    }
    Ok(Box::new(Hubspot {
        public_url: url.to_owned(),
    }))
}

impl Adapter for Hubspot {
    fn name(&self) -> &'static str {
        "hubspot"
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

    /// HMAC over the method, URI, body and timestamp; the body holds the ids and types.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let value = SIGNATURE.value(request.headers)?;
        let timestamp = required(request.headers, TIMESTAMP)?;
        let seconds = encoding::unix_millis_as_seconds(timestamp, TIMESTAMP)?;
        Ok(SignatureClaim {
            timestamp: Some(seconds),
            message: SignedMessage::new()
                .owned(format!(
                    "POST{}",
                    signed_uri(&self.public_url, request.query)
                ))
                .borrowed(request.body)
                .owned(timestamp),
            candidates: vec![SIGNATURE.decode(value)?],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let events = body
            .as_array()
            .ok_or_else(|| Refusal::malformed_body("the body is not a JSON array of events"))?;
        let ids: Vec<Option<String>> = events
            .iter()
            .map(|event| envelope::string_at(event, "/eventId"))
            .collect();
        let id = match (ids.first(), ids.last()) {
            (Some(Some(only)), _) if ids.len() == 1 => only.clone(),
            (Some(Some(first)), Some(Some(last))) => format!("{first}..{last}/{}", ids.len()),
            (None, _) => return Err(Refusal::missing_event_id("the batch has no events")),
            _ => {
                return Err(Refusal::missing_event_id(
                    "the first or last event has no `eventId`",
                ))
            }
        };
        let shared = |pointer: &str| {
            let values: Vec<Option<String>> = events
                .iter()
                .map(|event| envelope::string_at(event, pointer))
                .collect();
            match values.first() {
                Some(Some(first)) if values.iter().all(|v| v.as_ref() == Some(first)) => {
                    Some(first.clone())
                }
                _ => None,
            }
        };
        let event_type = shared("/subscriptionType").or_else(|| Some("batch".to_owned()));
        let event = Envelope::with_id(id)?
            .event_type(event_type)
            .object_id(shared("/objectId"))
            .created_at(
                events
                    .first()
                    .and_then(|e| envelope::integer_at(e, "/occurredAt"))
                    .map(|millis| millis.div_euclid(1000)),
            );
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let timestamp = (outgoing.now * 1000).to_string();
        let prefix = format!("POST{}", signed_uri(&self.public_url, None));
        let signature = SIGNATURE.sign_hmac(
            secret,
            &[prefix.as_bytes(), outgoing.body, timestamp.as_bytes()],
        );
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(TIMESTAMP, timestamp)
            .header(SIGNATURE.name, signature))
    }
}

/// The URI HubSpot signs: the configured URL, the request's query, and the
/// escapes HubSpot lists decoded.
fn signed_uri(public_url: &str, query: Option<&str>) -> String {
    let mut uri = match query.filter(|q| !q.is_empty()) {
        Some(query) => format!("{public_url}?{query}"),
        None => public_url.to_owned(),
    };
    for (escape, character) in DECODED {
        uri = uri.replace(escape, character);
        uri = uri.replace(&escape.to_ascii_lowercase(), character);
    }
    uri
}

/// Signs a request the way HubSpot does: `public_url` (and `query`) as the
/// URI, `timestamp` the header value. Used by tests and load generators.
pub fn sign(
    client_secret: &str,
    public_url: &str,
    query: Option<&str>,
    timestamp: &str,
    body: &[u8],
) -> String {
    let prefix = format!("POST{}", signed_uri(public_url, query));
    SIGNATURE.sign_hmac(
        client_secret.as_bytes(),
        &[prefix.as_bytes(), body, timestamp.as_bytes()],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "hubspot-client-secret";
    const URL: &str = "https://hooks.example.com/hooks/hubspot";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"[{"eventId":100,"subscriptionId":7,"portalId":62515,"appId":54321,"occurredAt":1700000000000,"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":123,"propertyName":"email"},{"eventId":101,"subscriptionId":7,"portalId":62515,"appId":54321,"occurredAt":1700000000500,"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":124,"propertyName":"email"}]"#;

    fn adapter() -> Box<dyn Adapter> {
        build(&AdapterSettings {
            public_url: Some(URL.into()),
            ..AdapterSettings::default()
        })
        .unwrap()
    }

    fn verify_with(
        signature: Option<&str>,
        timestamp: &str,
        query: Option<&str>,
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(adapter(), SECRET);
        let mut headers = Headers::new();
        headers.append(TIMESTAMP, timestamp);
        if let Some(signature) = signature {
            headers.append(SIGNATURE.name, signature);
        }
        verifier
            .verify(&Request::new(&headers, body).with_query(query), NOW)
            .map_err(|failure| failure.refusal.reason)
    }

    fn signed_at(seconds: i64, body: &[u8]) -> Result<Verified, Reason> {
        let timestamp = (seconds * 1000).to_string();
        let signature = sign(SECRET, URL, None, &timestamp, body);
        verify_with(Some(&signature), &timestamp, None, body)
    }

    #[test]
    fn the_public_url_is_required() {
        assert!(matches!(
            build(&AdapterSettings::default()).unwrap_err(),
            SettingsError::Missing { .. }
        ));
        assert!(matches!(
            build(&AdapterSettings {
                public_url: Some("hooks.example.com".into()),
                ..AdapterSettings::default()
            })
            .unwrap_err(),
            SettingsError::Invalid { .. }
        ));
    }

    #[test]
    fn a_batch_reads_as_one_event() {
        let verified = signed_at(NOW - 5, BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "100..101/2");
        assert_eq!(event.event_type.as_deref(), Some("contact.propertyChange"));
        assert_eq!(event.object_id, None);
        assert_eq!(event.created_at, Some(1_700_000_000));
        let one = br#"[{"eventId":5,"subscriptionType":"deal.creation","objectId":9}]"#;
        let event = signed_at(NOW, one).unwrap().event().unwrap().clone();
        assert_eq!(
            (event.event_id.as_str(), event.object_id.as_deref()),
            ("5", Some("9"))
        );
    }

    #[test]
    fn the_query_is_signed_with_listed_escapes_decoded() {
        let timestamp = (NOW * 1000).to_string();
        let query = "portal=1&path=%2Fa%3Ab%20c";
        assert_eq!(
            signed_uri(URL, Some(query)),
            format!("{URL}?portal=1&path=/a:b%20c")
        );
        let signature = sign(SECRET, URL, Some(query), &timestamp, BODY);
        assert!(verify_with(Some(&signature), &timestamp, Some(query), BODY).is_ok());
        assert_eq!(
            verify_with(Some(&signature), &timestamp, None, BODY).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn tolerance_window_both_directions() {
        test_support::assert_window(NOW, 300, |at| signed_at(at, BODY));
    }

    #[test]
    fn refusals() {
        let timestamp = (NOW * 1000).to_string();
        let good = sign(SECRET, URL, None, &timestamp, BODY);
        let mut tampered = BODY.to_vec();
        tampered[12] ^= 1;
        assert_eq!(
            verify_with(Some(&good), &timestamp, None, &tampered).unwrap_err(),
            Reason::Signature
        );
        let other_url = sign(
            SECRET,
            "https://elsewhere.example/h",
            None,
            &timestamp,
            BODY,
        );
        assert_eq!(
            verify_with(Some(&other_url), &timestamp, None, BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_with(Some(&good), &((NOW * 1000) + 1).to_string(), None, BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify_with(None, &timestamp, None, BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify_with(Some("!!"), &timestamp, None, BODY).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            verify_with(Some(&good), "soon", None, BODY).unwrap_err(),
            Reason::Timestamp
        );
        for body in [&b"[]"[..], br#"[{"subscriptionType":"x"}]"#] {
            let signature = sign(SECRET, URL, None, &timestamp, body);
            assert_eq!(
                verify_with(Some(&signature), &timestamp, None, body).unwrap_err(),
                Reason::MissingEventId
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in prop::collection::vec(any::<u8>(), 1..256),
            secret in "[A-Za-z0-9-]{1,40}",
            seconds in 0i64..4_000_000_000,
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let timestamp = (seconds * 1000).to_string();
            let signed = Signed::in_header(
                adapter(),
                &secret,
                SIGNATURE,
                &sign(&secret, URL, None, &timestamp, &body),
                &[(TIMESTAMP, &timestamp)],
            );
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
