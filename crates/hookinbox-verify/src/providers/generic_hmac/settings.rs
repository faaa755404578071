//! The configuration of a `generic_hmac` endpoint, and its start-up
//! validation: every mistake that would make requests verify against the
//! wrong bytes, or never verify, is an error naming the field.

use serde::Deserialize;

use super::template::{Piece, Template};
use crate::registry::SettingsError;
use crate::SignatureEncoding;

/// The timestamp tolerance when a timestamp header is set and no
/// `tolerance_seconds` is given: the five minutes most providers use.
pub fn default_tolerance_seconds() -> u64 {
    300
}

fn default_signed_content() -> String {
    "{body}".to_owned()
}

fn default_algorithm() -> HmacAlgorithm {
    HmacAlgorithm::Sha256
}

fn default_encoding() -> SignatureEncoding {
    SignatureEncoding::Hex
}

/// Three days: long enough for the retry schedules of most senders, since a
/// generic sender's own window is unknown.
fn default_redelivery_window_seconds() -> u64 {
    3 * 24 * 3600
}

/// The hash of the HMAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HmacAlgorithm {
    Sha256,
    Sha1,
}

impl HmacAlgorithm {
    /// The length of the MAC, in bytes.
    pub fn output_len(self) -> usize {
        match self {
            HmacAlgorithm::Sha256 => 32,
            HmacAlgorithm::Sha1 => 20,
        }
    }
}

/// How a sender without a dedicated adapter signs its webhooks: an HMAC of a
/// templated message, keyed with the secret string's own bytes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenericHmacSettings {
    /// The header that carries the signature (`X-Signature`).
    pub signature_header: String,
    /// Text before the encoded signature in its header (`sha256=`); a value
    /// without it is a malformed signature. None when the header holds only
    /// the signature.
    #[serde(default)]
    pub signature_prefix: Option<String>,
    /// The exact signed bytes, as a template over `{body}` (the raw body,
    /// required), `{timestamp}` (the timestamp header as sent; needs
    /// `timestamp_header`) and `{id}` (the id header as sent; needs
    /// `id_header`). Everything else is literal. Default `{body}`.
    #[serde(default = "default_signed_content")]
    pub signed_content: String,
    /// `sha256` (default) or `sha1`.
    #[serde(default = "default_algorithm")]
    pub algorithm: HmacAlgorithm,
    /// `hex` (default) or `base64`: the encoding of the signature in its header.
    #[serde(default = "default_encoding")]
    pub encoding: SignatureEncoding,
    /// The header that carries the signed timestamp, in integer unix
    /// seconds. When set, requests outside the tolerance are refused; its
    /// value must be signed (`{timestamp}` in `signed_content`).
    #[serde(default)]
    pub timestamp_header: Option<String>,
    /// The timestamp tolerance in seconds, both directions; only with
    /// `timestamp_header`. Defaults to 300 (`default_tolerance_seconds`).
    #[serde(default)]
    pub tolerance_seconds: Option<u64>,
    /// The header that carries the event id. Exactly one of `id_header` and
    /// `id_pointer` is required; the id must be the same on every retry.
    #[serde(default)]
    pub id_header: Option<String>,
    /// A JSON pointer (`/id`) to the event id in the body, which must then be JSON.
    #[serde(default)]
    pub id_pointer: Option<String>,
    /// The header that carries the event type, if any.
    #[serde(default)]
    pub type_header: Option<String>,
    /// A JSON pointer to the event type in the body, if any.
    #[serde(default)]
    pub type_pointer: Option<String>,
    /// How long the sender may redeliver one event: the minimum dedup
    /// retention. Default three days.
    #[serde(default = "default_redelivery_window_seconds")]
    pub redelivery_window_seconds: u64,
}

/// Where the event id, or the event type, is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Header(String),
    Pointer(String),
}

/// Settings checked at start-up, ready for the adapter.
#[derive(Debug, Clone)]
pub struct Validated {
    pub template: Template,
    pub tolerance_seconds: Option<u64>,
    pub id: Source,
    pub event_type: Option<Source>,
    /// Header names whose values the template signs (`{id}`, `{timestamp}`).
    pub signed_headers: Vec<String>,
}

impl Validated {
    /// Whether a value read from `source` is covered by the signature: the
    /// body always is; a header only when the template signs its value.
    pub fn is_signed(&self, source: &Source) -> bool {
        match source {
            Source::Pointer(_) => true,
            Source::Header(name) => self
                .signed_headers
                .iter()
                .any(|signed| signed.eq_ignore_ascii_case(name)),
        }
    }
}

impl GenericHmacSettings {
    /// A complete example (`X-Signature: sha256=<hex>` over
    /// `"{timestamp}.{body}"`, id and type from the JSON body), for tests and
    /// documentation.
    pub fn example() -> GenericHmacSettings {
        GenericHmacSettings {
            signature_header: "X-Signature".into(),
            signature_prefix: Some("sha256=".into()),
            signed_content: "{timestamp}.{body}".into(),
            algorithm: HmacAlgorithm::Sha256,
            encoding: SignatureEncoding::Hex,
            timestamp_header: Some("X-Timestamp".into()),
            tolerance_seconds: None,
            id_header: None,
            id_pointer: Some("/id".into()),
            type_header: None,
            type_pointer: Some("/type".into()),
            redelivery_window_seconds: default_redelivery_window_seconds(),
        }
    }

    /// Checks every rule that does not fit in the types.
    pub fn validate(&self) -> Result<Validated, SettingsError> {
        header_name("generic_hmac.signature_header", &self.signature_header)?;
        if self.signature_prefix.as_deref() == Some("") {
            return Err(invalid(
                "generic_hmac.signature_prefix",
                "is empty; leave it out when the header holds only the signature",
            ));
        }
        for (field, name) in [
            ("generic_hmac.timestamp_header", &self.timestamp_header),
            ("generic_hmac.id_header", &self.id_header),
            ("generic_hmac.type_header", &self.type_header),
        ] {
            if let Some(name) = name {
                header_name(field, name)?;
            }
        }
        for (field, pointer) in [
            ("generic_hmac.id_pointer", &self.id_pointer),
            ("generic_hmac.type_pointer", &self.type_pointer),
        ] {
            if let Some(pointer) = pointer {
                if !pointer.starts_with('/') {
                    return Err(invalid(
                        field,
                        format!("`{pointer}` is not a JSON pointer (it must start with `/`)"),
                    ));
                }
            }
        }

        let template = Template::parse(&self.signed_content)
            .map_err(|e| invalid("generic_hmac.signed_content", e.to_string()))?;
        if template.uses(&Piece::Timestamp) && self.timestamp_header.is_none() {
            return Err(invalid(
                "generic_hmac.signed_content",
                "uses {timestamp} but no `timestamp_header` is set",
            ));
        }
        if template.uses(&Piece::Id) && self.id_header.is_none() {
            return Err(invalid(
                "generic_hmac.signed_content",
                "uses {id} but no `id_header` is set",
            ));
        }
        // A timestamp outside the signed bytes could be refreshed by anyone
        // holding one signed request, and freshness would trust it.
        if self.timestamp_header.is_some() && !template.uses(&Piece::Timestamp) {
            return Err(invalid(
                "generic_hmac.timestamp_header",
                "its value is not part of `signed_content` (no {timestamp}): an unsigned \
                 timestamp proves nothing about freshness; add {timestamp} to the signed \
                 content, or leave the timestamp header out",
            ));
        }
        let tolerance_seconds = match (&self.timestamp_header, self.tolerance_seconds) {
            (Some(_), tolerance) => Some(tolerance.unwrap_or_else(default_tolerance_seconds)),
            (None, None) => None,
            (None, Some(_)) => {
                return Err(invalid(
                    "generic_hmac.tolerance_seconds",
                    "is set but no `timestamp_header` is: there is no timestamp to check",
                ))
            }
        };

        let id = match (&self.id_header, &self.id_pointer) {
            (Some(header), None) => Source::Header(header.clone()),
            (None, Some(pointer)) => Source::Pointer(pointer.clone()),
            (None, None) => {
                return Err(SettingsError::Missing {
                    provider: "generic_hmac",
                    field: "generic_hmac.id_header or generic_hmac.id_pointer",
                })
            }
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "generic_hmac.id_pointer",
                    "set either `id_header` or `id_pointer`, not both",
                ))
            }
        };
        let event_type = match (&self.type_header, &self.type_pointer) {
            (Some(header), None) => Some(Source::Header(header.clone())),
            (None, Some(pointer)) => Some(Source::Pointer(pointer.clone())),
            (None, None) => None,
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "generic_hmac.type_pointer",
                    "set either `type_header` or `type_pointer`, not both",
                ))
            }
        };
        let signed_headers = [
            (Piece::Id, &self.id_header),
            (Piece::Timestamp, &self.timestamp_header),
        ]
        .into_iter()
        .filter(|(piece, _)| template.uses(piece))
        .filter_map(|(_, name)| name.clone())
        .collect();
        Ok(Validated {
            template,
            tolerance_seconds,
            id,
            event_type,
            signed_headers,
        })
    }
}

fn invalid(field: &'static str, message: impl Into<String>) -> SettingsError {
    SettingsError::Invalid {
        field,
        message: message.into(),
    }
}

/// A header name must be an HTTP token, or no request could ever carry it.
fn header_name(field: &'static str, name: &str) -> Result<(), SettingsError> {
    let is_tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(is_tchar) {
        return Err(invalid(
            field,
            format!("`{name}` is not a valid HTTP header name"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One edit of the example settings that makes them invalid.
    type Change = fn(&mut GenericHmacSettings);

    fn field_of(err: SettingsError) -> &'static str {
        match err {
            SettingsError::Invalid { field, .. } | SettingsError::Missing { field, .. } => field,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn example_is_valid() {
        let validated = GenericHmacSettings::example().validate().unwrap();
        assert_eq!(validated.tolerance_seconds, Some(300));
        assert_eq!(validated.id, Source::Pointer("/id".into()));
    }

    #[test]
    fn defaults_fill_what_is_left_out() {
        let settings: GenericHmacSettings = serde_json::from_value(serde_json::json!({
            "signature_header": "X-Sig",
            "id_header": "X-Id",
        }))
        .unwrap();
        assert_eq!(settings.signed_content, "{body}");
        assert_eq!(settings.algorithm, HmacAlgorithm::Sha256);
        assert_eq!(settings.encoding, SignatureEncoding::Hex);
        assert_eq!(settings.redelivery_window_seconds, 3 * 24 * 3600);
        let validated = settings.validate().unwrap();
        assert_eq!(validated.tolerance_seconds, None);
        assert_eq!(validated.event_type, None);
    }

    #[test]
    fn unknown_fields_and_values_are_rejected() {
        let unknown = serde_json::from_value::<GenericHmacSettings>(serde_json::json!({
            "signature_header": "X-Sig", "id_header": "X-Id", "signature_hedaer": "x",
        }));
        assert!(unknown
            .unwrap_err()
            .to_string()
            .contains("signature_hedaer"));
        let algorithm = serde_json::from_value::<GenericHmacSettings>(serde_json::json!({
            "signature_header": "X-Sig", "id_header": "X-Id", "algorithm": "md5",
        }));
        assert!(algorithm.is_err());
        let missing = serde_json::from_value::<GenericHmacSettings>(serde_json::json!({
            "id_header": "X-Id",
        }));
        assert!(missing
            .unwrap_err()
            .to_string()
            .contains("signature_header"));
    }

    #[test]
    fn each_rule_names_its_field() {
        let cases: Vec<(Change, &str)> = vec![
            (
                |s| s.signature_header = "X Sig".into(),
                "generic_hmac.signature_header",
            ),
            (
                |s| s.signature_prefix = Some(String::new()),
                "generic_hmac.signature_prefix",
            ),
            (
                |s| s.timestamp_header = Some(String::new()),
                "generic_hmac.timestamp_header",
            ),
            (
                |s| s.signed_content = "{ts}.{body}".into(),
                "generic_hmac.signed_content",
            ),
            (
                |s| s.signed_content = "{timestamp}".into(),
                "generic_hmac.signed_content",
            ),
            (
                |s| {
                    s.timestamp_header = None;
                },
                "generic_hmac.signed_content",
            ),
            (
                |s| s.signed_content = "{id}.{body}".into(),
                "generic_hmac.signed_content",
            ),
            // A timestamp header outside the signed bytes: freshness would
            // trust a value anyone can change.
            (
                |s| s.signed_content = "{body}".into(),
                "generic_hmac.timestamp_header",
            ),
            (
                |s| {
                    s.signed_content = "{body}".into();
                    s.timestamp_header = None;
                    s.tolerance_seconds = Some(60);
                },
                "generic_hmac.tolerance_seconds",
            ),
            (
                |s| s.id_pointer = None,
                "generic_hmac.id_header or generic_hmac.id_pointer",
            ),
            (
                |s| s.id_header = Some("X-Id".into()),
                "generic_hmac.id_pointer",
            ),
            (
                |s| s.id_pointer = Some("id".into()),
                "generic_hmac.id_pointer",
            ),
            (
                |s| s.type_header = Some("X-Type".into()),
                "generic_hmac.type_pointer",
            ),
            (
                |s| s.type_pointer = Some("type".into()),
                "generic_hmac.type_pointer",
            ),
        ];
        for (change, field) in cases {
            let mut settings = GenericHmacSettings::example();
            change(&mut settings);
            let err = settings.validate().unwrap_err();
            assert!(err.to_string().contains(field), "{err}");
            assert_eq!(field_of(err), field);
        }
    }

    #[test]
    fn id_in_template_with_id_header_is_valid() {
        let mut settings = GenericHmacSettings::example();
        settings.signed_content = "{id}.{timestamp}.{body}".into();
        settings.id_pointer = None;
        settings.id_header = Some("X-Id".into());
        settings.tolerance_seconds = Some(60);
        let validated = settings.validate().unwrap();
        assert_eq!(validated.id, Source::Header("X-Id".into()));
        assert_eq!(validated.tolerance_seconds, Some(60));
    }
}
