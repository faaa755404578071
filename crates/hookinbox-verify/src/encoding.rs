//! Transport encodings of signatures and timestamps as they appear in headers.

use crate::Refusal;

/// Decodes a hex signature (either case).
pub fn hex_signature(text: &str) -> Option<Vec<u8>> {
    hex::decode(text.trim()).ok()
}

/// Decodes a standard-base64 signature (padding optional).
pub fn base64_signature(text: &str) -> Option<Vec<u8>> {
    crate::key::decode_base64(text)
}

/// Parses a timestamp header of integer unix seconds. Anything else
/// (`1699999970.0`, blanks, signs) is a `timestamp` refusal: the scheme
/// defines the timestamp as an integer.
pub fn unix_seconds(text: &str, what: &str) -> Result<i64, Refusal> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.len() > 18 || !trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Refusal::timestamp(format!(
            "{what} is not an integer number of seconds"
        )));
    }
    trimmed
        .parse()
        .map_err(|_| Refusal::timestamp(format!("{what} is out of range")))
}

/// Parses a timestamp header of integer unix *milliseconds* (Airwallex,
/// Recurly, HubSpot) into whole seconds, floored: the same grammar as
/// [`unix_seconds`], so anything but an integer is a `timestamp` refusal.
/// Flooring makes the future edge of a window up to 999 ms more lenient.
pub fn unix_millis_as_seconds(text: &str, what: &str) -> Result<i64, Refusal> {
    unix_seconds(text, what).map(|millis| millis.div_euclid(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_seconds_takes_only_integers() {
        assert_eq!(unix_seconds("1699999970", "t").unwrap(), 1_699_999_970);
        for bad in [
            "1699999970.0",
            "",
            "-5",
            "+5",
            "1e9",
            "99999999999999999999",
        ] {
            assert_eq!(
                unix_seconds(bad, "t").unwrap_err().reason,
                crate::Reason::Timestamp,
                "{bad}"
            );
        }
    }

    #[test]
    fn signatures_decode_both_cases() {
        assert_eq!(hex_signature("0aFF"), Some(vec![0x0a, 0xff]));
        assert_eq!(hex_signature("zz"), None);
        assert_eq!(base64_signature("AAE="), Some(vec![0, 1]));
        assert_eq!(base64_signature("AAE"), Some(vec![0, 1]));
    }

    #[test]
    fn milliseconds_are_floored_to_seconds() {
        assert_eq!(
            unix_millis_as_seconds("1700000000999", "t").unwrap(),
            1_700_000_000
        );
        assert_eq!(
            unix_millis_as_seconds("1700000000.5", "t")
                .unwrap_err()
                .reason,
            crate::Reason::Timestamp
        );
    }
}
