//! An inline secret as the file spells it (`value = "…"`, `token = "…"`):
//! a TOML string, read straight into a [`SecretString`].
//!
//! Only the type's error needs care. serde's own message for a value of
//! the wrong type quotes it (`invalid type: integer `4242…`, expected a
//! string`), and a numeric token written without quotes is still the
//! token. This visitor refuses every other type with a message that names
//! the type only; the parse error adds the line.

use std::fmt;

use secrecy::SecretString;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

/// `#[serde(default, deserialize_with = "inline_secret::deserialize")]`
/// on an `Option<SecretString>` field.
pub fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<SecretString>, D::Error> {
    deserializer.deserialize_any(InlineSecret).map(Some)
}

struct InlineSecret;

fn refused<E: de::Error>(what: &str) -> E {
    E::custom(format!(
        "a secret must be a string in quotes, not {what} (the value is not shown)"
    ))
}

impl<'de> Visitor<'de> for InlineSecret {
    type Value = SecretString;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a secret as a string")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<SecretString, E> {
        Ok(SecretString::from(value))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<SecretString, E> {
        Ok(SecretString::from(value))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<SecretString, E> {
        Err(refused("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<SecretString, E> {
        Err(refused("an integer"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<SecretString, E> {
        Err(refused("an integer"))
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<SecretString, E> {
        Err(refused("an integer"))
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<SecretString, E> {
        Err(refused("an integer"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<SecretString, E> {
        Err(refused("a number"))
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<SecretString, E> {
        Err(refused("bytes"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<SecretString, A::Error> {
        Err(refused("an array"))
    }

    // A TOML date-time arrives as a map too.
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<SecretString, A::Error> {
        Err(refused("a table or a date"))
    }
}
