//! `generic_hmac` — a configurable HMAC scheme for senders without a
//! dedicated adapter. Everything below comes from [`GenericHmacSettings`],
//! validated at start-up.
//!
//! - Headers: `signature_header` (optionally after `signature_prefix`),
//!   optionally `timestamp_header` (integer unix seconds; anything else is a
//!   `timestamp` refusal) and `id_header`. A configured timestamp header that
//!   is absent, or an id header the signed content needs, is
//!   `missing_signature`: the signed bytes cannot be rebuilt without it. A
//!   `timestamp_header` must be signed (`{timestamp}` in `signed_content`),
//!   or freshness would trust a value anyone can change: start-up refuses it.
//! - Signed bytes: the `signed_content` template, default `{body}`;
//!   `{timestamp}` and `{id}` are the header values exactly as sent.
//! - Algorithm and key: HMAC-SHA256 (default) or HMAC-SHA1, keyed with the
//!   secret string's own bytes; the signature in hex (default) or base64.
//! - Tolerance: `tolerance_seconds` (default 300) when a timestamp header is
//!   set, both directions; none otherwise.
//! - Event id: `id_header` or the JSON pointer `id_pointer` (exactly one).
//!   Whether it is stable across retries is the sender's promise; an endpoint
//!   should only be configured with an id that is. An id header is signed
//!   only when `signed_content` has `{id}`; otherwise the adapter declares
//!   the id unsigned (see [`crate::coverage`]).
//! - Type: `type_header` or `type_pointer`, if set; a type header is signed
//!   only when the template signs that header. Object id / version: none.
//! - Redelivery window: `redelivery_window_seconds`, default 3 days.

mod settings;
mod template;

pub use crate::SignatureEncoding;
pub use settings::{default_tolerance_seconds, GenericHmacSettings, HmacAlgorithm};
pub use template::{Piece, Template, TemplateError};

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::{self, SignatureHeader};
use crate::{
    Adapter, Algorithm, BodyCoverage, Envelope, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};
use settings::{Source, Validated};

/// A `generic_hmac` adapter built from validated settings.
#[derive(Debug, Clone)]
pub struct GenericHmac {
    settings: GenericHmacSettings,
    validated: Validated,
}

pub fn build(settings: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    let generic = settings
        .generic_hmac
        .as_ref()
        .ok_or(SettingsError::Missing {
            provider: "generic_hmac",
            field: "generic_hmac",
        })?;
    Ok(Box::new(GenericHmac::new(generic.clone())?))
}

impl GenericHmac {
    /// Validates the settings; an error names the field at fault.
    pub fn new(settings: GenericHmacSettings) -> Result<GenericHmac, SettingsError> {
        let validated = settings.validate()?;
        Ok(GenericHmac {
            settings,
            validated,
        })
    }

    pub fn settings(&self) -> &GenericHmacSettings {
        &self.settings
    }

    /// The signature header value a sender with these settings would send:
    /// the prefix, then the encoded HMAC of the signed content. `timestamp`
    /// and `id` are the header values, needed only when the template uses
    /// them. For tests and examples.
    pub fn sign(&self, secret: &str, timestamp: &str, id: &str, body: &[u8]) -> String {
        let content: Vec<&[u8]> = self
            .validated
            .template
            .pieces()
            .iter()
            .map(|piece| match piece {
                Piece::Literal(text) => text.as_bytes(),
                Piece::Body => body,
                Piece::Timestamp => timestamp.as_bytes(),
                Piece::Id => id.as_bytes(),
            })
            .collect();
        self.signature_header()
            .sign_hmac(secret.as_bytes(), &content)
    }

    /// The configured signature header; a MAC of the wrong length is
    /// malformed.
    fn signature_header(&self) -> SignatureHeader<'_> {
        let settings = &self.settings;
        let algorithm = match settings.algorithm {
            HmacAlgorithm::Sha256 => Algorithm::HmacSha256,
            HmacAlgorithm::Sha1 => Algorithm::HmacSha1,
        };
        SignatureHeader {
            name: &settings.signature_header,
            prefix: settings.signature_prefix.as_deref(),
            encoding: settings.encoding,
            algorithm,
            length: Some(settings.algorithm.output_len()),
        }
    }
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Generic HMAC (configured scheme)",
    docs_url: "docs/configuration.md",
    scheme: "HMAC-SHA256 or HMAC-SHA1, hex or base64, the configured `signature_header`",
    signed_parts: "the `signed_content` template (default `{body}`)",
    id_source:
        "`id_header` or `id_pointer` as configured (signed only when the template covers it)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py",
    ),
    signing: crate::Signing::Symmetric,
};

impl Adapter for GenericHmac {
    fn name(&self) -> &'static str {
        "generic_hmac"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        self.validated.tolerance_seconds
    }

    fn redelivery_window_seconds(&self) -> u64 {
        self.settings.redelivery_window_seconds
    }

    /// The template always signs the body (validation requires `{body}`); an
    /// id or type header is signed only when the template signs its value.
    fn coverage(&self) -> SignatureCoverage {
        let validated = &self.validated;
        SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: validated.is_signed(&validated.id),
            event_type: validated
                .event_type
                .as_ref()
                .is_none_or(|source| validated.is_signed(source)),
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret)
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let settings = &self.settings;
        let headers = request.headers;
        let candidate = self.signature_header().candidate(headers)?;
        let timestamp = match &settings.timestamp_header {
            Some(name) => Some(signature_header::unix_timestamp(headers, name)?),
            None => None,
        };

        let mut message = SignedMessage::new();
        for piece in self.validated.template.pieces() {
            message = match piece {
                Piece::Literal(text) => message.owned(text.as_bytes()),
                Piece::Body => message.borrowed(request.body),
                // Validation guarantees the header is configured when the template uses it.
                Piece::Timestamp => match timestamp {
                    Some(timestamp) => message.borrowed(timestamp.text.as_bytes()),
                    None => return Err(Refusal::missing_signature("no timestamp header")),
                },
                Piece::Id => {
                    let name = settings.id_header.as_deref().unwrap_or_default();
                    message.borrowed(signature_header::required(headers, name)?.as_bytes())
                }
            };
        }
        Ok(SignatureClaim {
            timestamp: timestamp.map(|timestamp| timestamp.seconds),
            message,
            candidates: vec![candidate],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let uses_body = matches!(self.validated.id, Source::Pointer(_))
            || matches!(self.validated.event_type, Some(Source::Pointer(_)));
        let body = if uses_body {
            Some(envelope::json(request.body)?)
        } else {
            None
        };
        let read = |source: &Source| -> Option<String> {
            match source {
                Source::Header(name) => request.headers.get_nonempty(name).map(str::to_owned),
                Source::Pointer(pointer) => envelope::string_at(body.as_ref()?, pointer),
            }
        };
        let id = read(&self.validated.id).ok_or_else(|| {
            Refusal::missing_event_id(match &self.validated.id {
                Source::Header(name) => format!("no {name} header"),
                Source::Pointer(pointer) => format!("no event id at `{pointer}` in the body"),
            })
        })?;
        let event_type = self.validated.event_type.as_ref().and_then(read);
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
        let secret = String::from_utf8_lossy(crate::signer::shared_secret(&key)?).into_owned();
        let settings = &self.settings;
        let timestamp = outgoing.now.to_string();
        let mut request = crate::signer::SignedRequest::json(outgoing.body);
        if let Some(name) = &settings.timestamp_header {
            request = request.header(name, timestamp.as_str());
        }
        if let Some(name) = &settings.id_header {
            request = request.header(name, outgoing.event_id);
        }
        let signature = self.sign(&secret, &timestamp, outgoing.event_id, outgoing.body);
        Ok(request.header(&settings.signature_header, signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "generic secret";
    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"id":"e1","type":"thing.done"}"#;

    fn adapter(settings: GenericHmacSettings) -> GenericHmac {
        GenericHmac::new(settings).unwrap()
    }

    fn verify_with(
        adapter: &GenericHmac,
        secret: &str,
        h: &Headers,
        body: &[u8],
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(adapter.clone()), secret);
        test_support::verify(&verifier, h, body, NOW)
    }

    fn verify(adapter: &GenericHmac, h: &Headers, body: &[u8]) -> Result<Verified, Reason> {
        verify_with(adapter, SECRET, h, body)
    }

    /// Headers of the example scheme, signed at `ts`.
    fn signed(a: &GenericHmac, ts: i64, body: &[u8]) -> Headers {
        let ts = ts.to_string();
        [
            ("X-Signature", a.sign(SECRET, &ts, "", body)),
            ("X-Timestamp", ts),
        ]
        .into_iter()
        .collect()
    }

    /// A scheme with the id in a header and in the signed bytes.
    fn id_header_settings() -> GenericHmacSettings {
        GenericHmacSettings {
            signature_header: "X-Sig".into(),
            signature_prefix: None,
            signed_content: "{id}:{body}".into(),
            algorithm: HmacAlgorithm::Sha1,
            encoding: SignatureEncoding::Base64,
            timestamp_header: None,
            tolerance_seconds: None,
            id_header: Some("X-Delivery".into()),
            id_pointer: None,
            type_header: Some("X-Event".into()),
            type_pointer: None,
            redelivery_window_seconds: 3600,
        }
    }

    #[test]
    fn example_scheme_verifies() {
        let a = adapter(GenericHmacSettings::example());
        let verified = verify(&a, &signed(&a, NOW, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "e1");
        assert_eq!(event.event_type.as_deref(), Some("thing.done"));
        assert_eq!(a.default_tolerance_seconds(), Some(300));
    }

    #[test]
    fn header_id_sha1_base64_scheme_verifies() {
        let a = adapter(id_header_settings());
        let body = b"any bytes, not JSON";
        let h: Headers = [
            ("X-Sig", a.sign(SECRET, "", "d-1", body)),
            ("X-Delivery", "d-1".into()),
            ("X-Event", "ping".into()),
        ]
        .into_iter()
        .collect();
        let verified = verify(&a, &h, body).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "d-1");
        assert_eq!(event.event_type.as_deref(), Some("ping"));
        assert_eq!(a.default_tolerance_seconds(), None);
        assert_eq!(a.redelivery_window_seconds(), 3600);

        // The id is signed: another id with the same signature fails.
        let h: Headers = [
            ("X-Sig", a.sign(SECRET, "", "d-1", body)),
            ("X-Delivery", "d-2".into()),
        ]
        .into_iter()
        .collect();
        assert_eq!(verify(&a, &h, body).unwrap_err(), Reason::Signature);
        // Without the id header the signed bytes cannot be rebuilt.
        let h: Headers = [("X-Sig", a.sign(SECRET, "", "d-1", body))]
            .into_iter()
            .collect();
        assert_eq!(verify(&a, &h, body).unwrap_err(), Reason::MissingSignature);
    }

    #[test]
    fn coverage_follows_the_signed_content() {
        // Id and type from the signed body.
        let a = adapter(GenericHmacSettings::example());
        assert_eq!(a.coverage(), SignatureCoverage::COMPLETE);
        // Id header inside the template, type header outside it.
        let a = adapter(id_header_settings());
        let coverage = a.coverage();
        assert!(coverage.event_id && !coverage.event_type, "{coverage:?}");
        // An id header the template does not sign.
        let mut settings = id_header_settings();
        settings.signed_content = "{body}".into();
        settings.type_header = None;
        let coverage = adapter(settings).coverage();
        assert!(!coverage.event_id && coverage.event_type, "{coverage:?}");
        assert_eq!(coverage.body, BodyCoverage::Signed);
    }

    #[test]
    fn tampered_byte_and_wrong_secret_are_refused() {
        let a = adapter(GenericHmacSettings::example());
        let mut body = BODY.to_vec();
        body[4] ^= 1;
        assert_eq!(
            verify(&a, &signed(&a, NOW, BODY), &body).unwrap_err(),
            Reason::Signature
        );
        let h = signed(&a, NOW, BODY);
        assert_eq!(
            verify_with(&a, "other secret", &h, BODY).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn missing_and_malformed_headers() {
        let a = adapter(GenericHmacSettings::example());
        let ts = NOW.to_string();
        let good = a.sign(SECRET, &ts, "", BODY);
        let only = |pairs: &[(&str, &str)]| -> Headers { pairs.iter().copied().collect() };
        assert_eq!(
            verify(&a, &only(&[("X-Timestamp", &ts)]), BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(&a, &only(&[("X-Signature", &good)]), BODY).unwrap_err(),
            Reason::MissingSignature
        );
        let hex = &good["sha256=".len()..];
        for bad in [
            hex.to_owned(),
            "sha256=zz".to_owned(),
            format!("sha256={}", &hex[..40]),
        ] {
            let h = only(&[("X-Signature", &bad), ("X-Timestamp", &ts)]);
            assert_eq!(
                verify(&a, &h, BODY).unwrap_err(),
                Reason::MalformedSignature,
                "{bad}"
            );
        }
        let h = only(&[("X-Signature", &good), ("X-Timestamp", "17e8")]);
        assert_eq!(verify(&a, &h, BODY).unwrap_err(), Reason::Timestamp);
    }

    #[test]
    fn timestamp_window_edges_both_ways() {
        let a = adapter(GenericHmacSettings::example());
        test_support::assert_window(NOW, 300, |ts| verify(&a, &signed(&a, ts, BODY), BODY));
    }

    #[test]
    fn envelope_errors_come_after_verification() {
        let a = adapter(GenericHmacSettings::example());
        let body = br#"{"type":"x"}"#;
        assert_eq!(
            verify(&a, &signed(&a, NOW, body), body).unwrap_err(),
            Reason::MissingEventId
        );
        let body = b"not json";
        assert_eq!(
            verify(&a, &signed(&a, NOW, body), body).unwrap_err(),
            Reason::MalformedBody
        );
    }

    #[test]
    fn a_timestamp_header_outside_the_signed_content_is_refused_at_build() {
        let mut unsigned_timestamp = GenericHmacSettings::example();
        unsigned_timestamp.signed_content = "{body}".into();
        let settings = AdapterSettings {
            generic_hmac: Some(unsigned_timestamp),
            ..AdapterSettings::default()
        };
        let err = build(&settings).unwrap_err();
        assert!(
            matches!(
                err,
                SettingsError::Invalid {
                    field: "generic_hmac.timestamp_header",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("{timestamp}"), "{err}");
    }

    #[test]
    fn build_requires_settings() {
        let err = build(&AdapterSettings::default()).unwrap_err();
        assert_eq!(
            err,
            SettingsError::Missing {
                provider: "generic_hmac",
                field: "generic_hmac"
            }
        );
        let mut bad = GenericHmacSettings::example();
        bad.signed_content = "{nope}".into();
        let settings = AdapterSettings {
            generic_hmac: Some(bad),
            ..AdapterSettings::default()
        };
        assert!(build(&settings).is_err());
    }
}
