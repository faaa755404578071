//! What the pipeline learns from a *verified* body: the logical event id and
//! the metadata that delivery and ordering use. Also the synchronous replies
//! some providers require (URL verification handshakes), which are answered
//! but never stored.

pub use crate::json_fields::JsonFields;
use crate::Refusal;

/// Longest event id accepted; anything longer is not an id a provider sends.
pub const MAX_EVENT_ID_LEN: usize = 256;

/// The envelope of one logical event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Envelope {
    /// The provider's id of the logical event, stable across its retries.
    pub event_id: String,
    pub event_type: Option<String>,
    /// The business object the event is about, for per-object ordering.
    pub object_id: Option<String>,
    /// A version of that object that only grows, when the provider gives a trustworthy one.
    pub object_version: Option<i64>,
    /// When the provider says it created the event (unix seconds).
    pub created_at: Option<i64>,
}

impl Envelope {
    /// An envelope with a checked event id.
    pub fn with_id(event_id: impl Into<String>) -> Result<Envelope, Refusal> {
        let event_id = event_id.into();
        let trimmed = event_id.trim();
        if trimmed.is_empty() {
            return Err(Refusal::missing_event_id("the event id is empty"));
        }
        if trimmed.len() > MAX_EVENT_ID_LEN || trimmed.chars().any(char::is_control) {
            return Err(Refusal::malformed_body(
                "the event id is too long or has control characters",
            ));
        }
        Ok(Envelope {
            event_id: trimmed.to_owned(),
            ..Envelope::default()
        })
    }

    pub fn event_type(mut self, event_type: Option<String>) -> Self {
        self.event_type = event_type.filter(|t| !t.is_empty());
        self
    }

    pub fn object_id(mut self, object_id: Option<String>) -> Self {
        self.object_id = object_id.filter(|t| !t.is_empty());
        self
    }

    pub fn object_version(mut self, version: Option<i64>) -> Self {
        self.object_version = version;
        self
    }

    pub fn created_at(mut self, created_at: Option<i64>) -> Self {
        self.created_at = created_at;
        self
    }
}

/// A synchronous answer the provider expects instead of a stored event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(value: &serde_json::Value) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    pub fn text(body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status: 200,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }
}

/// What a verified body turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A logical event to accept durably.
    Event(Envelope),
    /// A handshake to answer now; nothing is stored.
    Handshake(Reply),
    /// A verified event of a type the endpoint does not take: acknowledged so
    /// the provider stops retrying, counted, not stored. Only the verifier
    /// produces this; adapters return `Event`.
    Ignored(Envelope),
}

/// Parses the verified body as JSON.
pub fn json(body: &[u8]) -> Result<serde_json::Value, Refusal> {
    serde_json::from_slice(body).map_err(|_| Refusal::malformed_body("the body is not valid JSON"))
}

/// A string at a JSON pointer; numbers are rendered in decimal (ids such as
/// Shopify's are numbers).
pub fn string_at(value: &serde_json::Value, pointer: &str) -> Option<String> {
    match value.pointer(pointer)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An integer at a JSON pointer (a number, or a string of digits).
pub fn integer_at(value: &serde_json::Value, pointer: &str) -> Option<i64> {
    match value.pointer(pointer)? {
        serde_json::Value::Number(n) => n.as_i64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// An RFC 3339 time at a JSON pointer, as unix seconds (see
/// [`rfc3339_seconds`]); metadata only.
pub fn rfc3339_at(value: &serde_json::Value, pointer: &str) -> Option<i64> {
    rfc3339_seconds(&string_at(value, pointer)?)
}

/// The required event id at a JSON pointer.
pub fn required_id_at(value: &serde_json::Value, pointer: &str) -> Result<Envelope, Refusal> {
    match string_at(value, pointer) {
        Some(id) => Envelope::with_id(id),
        None => Err(Refusal::missing_event_id(format!(
            "no event id at `{pointer}` in the body"
        ))),
    }
}

/// Parses an RFC 3339 timestamp (`2026-11-30T00:00:00Z`; fractions, which are
/// dropped, and numeric offsets allowed) into unix seconds.
///
/// Twitch's signed message timestamp goes through here, so a freshness
/// decision depends on it: the grammar and the calendar (month lengths, leap
/// years, offsets up to ±23:59) are the `time` crate's, not ours. A leap second
/// (`:60`) is refused even where `time` would fold it into `:59.999999999`:
/// no provider's clock emits one (none has been inserted since 2016), so a
/// `:60` is malformed or crafted, and a signed time should not depend on which
/// library happens to accept it.
pub fn rfc3339_seconds(text: &str) -> Option<i64> {
    // RFC 3339 fixes every field's width: `YYYY-MM-DDThh:mm:ss` puts the
    // seconds at bytes 17..19 of any text the parser below accepts.
    if text.get(17..19) == Some("60") {
        return None;
    }
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(time::OffsetDateTime::unix_timestamp)
}

/// The id of an event its provider names only by its content: `sha256:` and
/// the hex SHA-256 of the signed raw body (a retry resends the same bytes).
pub fn body_fingerprint(body: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked() {
        assert_eq!(Envelope::with_id(" evt_1 ").unwrap().event_id, "evt_1");
        assert_eq!(
            Envelope::with_id("").unwrap_err().reason,
            crate::Reason::MissingEventId
        );
        assert_eq!(
            Envelope::with_id("a".repeat(MAX_EVENT_ID_LEN + 1))
                .unwrap_err()
                .reason,
            crate::Reason::MalformedBody
        );
    }

    #[test]
    fn rfc3339_parses_common_forms() {
        assert_eq!(rfc3339_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339_seconds("2023-11-14T22:13:20Z"), Some(1_700_000_000));
        assert_eq!(rfc3339_seconds("2023-11-14t22:13:20z"), Some(1_700_000_000));
        assert_eq!(rfc3339_seconds("2023-11-14 22:13:20Z"), Some(1_700_000_000));
        assert_eq!(rfc3339_seconds("yesterday"), None);
        assert_eq!(rfc3339_seconds(""), None);
    }

    #[test]
    fn rfc3339_knows_month_lengths_and_leap_years() {
        // 2024 is a leap year, 2023 is not; 2000 is (divisible by 400), 1900 is not.
        assert_eq!(rfc3339_seconds("2024-02-29T00:00:00Z"), Some(1_709_164_800));
        assert_eq!(rfc3339_seconds("2023-02-29T00:00:00Z"), None);
        assert_eq!(rfc3339_seconds("2000-02-29T00:00:00Z"), Some(951_782_400));
        assert_eq!(rfc3339_seconds("1900-02-29T00:00:00Z"), None);
        assert_eq!(rfc3339_seconds("2023-02-28T23:59:59Z"), Some(1_677_628_799));
        assert_eq!(rfc3339_seconds("2023-02-31T00:00:00Z"), None);
        assert_eq!(rfc3339_seconds("2023-04-31T00:00:00Z"), None);
        assert_eq!(rfc3339_seconds("2023-04-30T00:00:00Z"), Some(1_682_812_800));
        assert_eq!(rfc3339_seconds("2023-13-01T00:00:00Z"), None);
        assert_eq!(rfc3339_seconds("2023-00-01T00:00:00Z"), None);
    }

    #[test]
    fn rfc3339_refuses_second_60_and_out_of_range_times() {
        assert_eq!(rfc3339_seconds("2023-11-14T22:13:59Z"), Some(1_700_000_039));
        assert_eq!(rfc3339_seconds("2023-11-14T22:13:60Z"), None);
        // A real leap second (end of 2016) is refused too.
        assert_eq!(rfc3339_seconds("2016-12-31T23:59:60Z"), None);
        assert_eq!(rfc3339_seconds("2016-12-31T23:59:60.5Z"), None);
        assert_eq!(rfc3339_seconds("2023-11-14T24:00:00Z"), None);
        assert_eq!(rfc3339_seconds("2023-11-14T22:60:00Z"), None);
    }

    #[test]
    fn rfc3339_applies_offsets() {
        for text in [
            "2023-11-15T00:13:20+02:00",
            "2023-11-14T16:43:20-05:30",
            "2023-11-14T22:13:20+00:00",
            "2023-11-14T22:13:20-00:00",
            "2023-11-15T22:12:20+23:59",
        ] {
            assert_eq!(rfc3339_seconds(text), Some(1_700_000_000), "{text}");
        }
        for text in [
            "2023-11-14T22:13:20+24:00",
            "2023-11-14T22:13:20+02:60",
            "2023-11-14T22:13:20+0200",
            "2023-11-14T22:13:20+02",
            "2023-11-14T22:13:20",
            "2023-11-14T22:13:20Z ",
        ] {
            assert_eq!(rfc3339_seconds(text), None, "{text}");
        }
    }

    #[test]
    fn rfc3339_drops_fractions() {
        for text in [
            "2023-11-14T22:13:20.0Z",
            "2023-11-14T22:13:20.634234626Z",
            "2023-11-14T22:13:20.999999999Z",
            "2023-11-14T22:13:20.1234567891Z",
        ] {
            assert_eq!(rfc3339_seconds(text), Some(1_700_000_000), "{text}");
        }
        // Before 1970 the second is still the one the instant falls in.
        assert_eq!(rfc3339_seconds("1969-12-31T23:59:59.5Z"), Some(-1));
        assert_eq!(rfc3339_seconds("2023-11-14T22:13:20.Z"), None);
        assert_eq!(rfc3339_seconds("2023-11-14T22:13:20,5Z"), None);
    }

    #[test]
    fn numbers_and_strings_read_as_ids() {
        let v: serde_json::Value = serde_json::json!({"a": 12, "b": "x", "c": {"d": "7"}});
        assert_eq!(string_at(&v, "/a").as_deref(), Some("12"));
        assert_eq!(string_at(&v, "/b").as_deref(), Some("x"));
        assert_eq!(integer_at(&v, "/c/d"), Some(7));
        assert_eq!(string_at(&v, "/missing"), None);
        let t = serde_json::json!({"at": "2023-11-14T22:13:20Z", "n": 5});
        assert_eq!(rfc3339_at(&t, "/at"), Some(1_700_000_000));
        assert_eq!(rfc3339_at(&t, "/n"), None);
    }
}
