//! What the pipeline learns from a *verified* body: the logical event id and
//! the metadata that delivery and ordering use. Also the synchronous replies
//! some providers require (URL verification handshakes), which are answered
//! but never stored.

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

/// Parses an RFC 3339 UTC timestamp (`2026-11-30T00:00:00Z`, fractions and
/// offsets allowed) into unix seconds. Only used for metadata, never for
/// freshness decisions.
pub fn rfc3339_seconds(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ')
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) => {
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            let h: i64 = rest.get(1..3)?.parse().ok()?;
            let m: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
        assert_eq!(
            rfc3339_seconds("2023-11-14T22:13:20.123456Z"),
            Some(1_700_000_000)
        );
        assert_eq!(
            rfc3339_seconds("2023-11-15T00:13:20+02:00"),
            Some(1_700_000_000)
        );
        assert_eq!(rfc3339_seconds("yesterday"), None);
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
