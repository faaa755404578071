//! The few fields of a JSON body that an envelope reads, in one pass over the
//! body, without building it as a [`serde_json::Value`].
//!
//! A `Value` of a webhook body copies every string and builds a map per
//! object, only for an adapter to read an id, a type and a time out of it:
//! on a 10 KiB body that was most of the envelope's cost (bench/RESULTS.md,
//! section 0f). [`JsonFields::read`] walks the body once, keeps the scalars at
//! the JSON pointers asked for (borrowed from the body when they have no
//! escapes) and skips the rest without allocating.
//!
//! It answers exactly what the `Value` readers of [`crate::envelope`] answer
//! on the same body — the tests compare the two on every fixture and on the
//! edge cases — so an adapter can switch without changing what it accepts:
//!
//! - a body is refused as not JSON in the same cases: not UTF-8 (checked
//!   once over the whole body, as `from_slice` checks each string), a syntax
//!   error, trailing characters, a number out of range, nesting deeper than
//!   `serde_json`'s limit (every value is parsed, not skipped unchecked);
//! - a key given twice counts as its last occurrence, as in a `Value`'s map;
//! - a pointer reaches through objects and arrays as
//!   [`serde_json::Value::pointer`] does (`~0`/`~1` escapes, array indexes
//!   without a sign or leading zeros).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::envelope::{self, Envelope};
use crate::Refusal;

/// The scalars of one body at the pointers asked for.
#[derive(Debug)]
pub struct JsonFields<'b, 'p> {
    pointers: &'p [&'p str],
    values: Vec<Option<Scalar<'b>>>,
}

/// A string or a number: what the envelope readers take from a body.
#[derive(Debug, Clone, PartialEq)]
enum Scalar<'b> {
    Text(Cow<'b, str>),
    Number(serde_json::Number),
}

impl<'b, 'p> JsonFields<'b, 'p> {
    /// Reads the scalars at `pointers` from `body`, or refuses a body that is
    /// not JSON, with the refusal of [`envelope::json`].
    pub fn read(body: &'b [u8], pointers: &'p [&'p str]) -> Result<Self, Refusal> {
        let not_json = || Refusal::malformed_body("the body is not valid JSON");
        let text = std::str::from_utf8(body).map_err(|_| not_json())?;
        let wanted: Vec<Wanted<'p>> = pointers
            .iter()
            .enumerate()
            .filter_map(|(slot, pointer)| Wanted::new(slot, pointer))
            .collect();
        let mut values = vec![None; pointers.len()];
        let mut deserializer = serde_json::Deserializer::from_str(text);
        Node {
            wanted: &wanted,
            values: &mut values,
        }
        .deserialize(&mut deserializer)
        .map_err(|_| not_json())?;
        deserializer.end().map_err(|_| not_json())?;
        Ok(JsonFields { pointers, values })
    }

    fn at(&self, pointer: &str) -> Option<&Scalar<'b>> {
        let slot = self.pointers.iter().position(|asked| *asked == pointer)?;
        self.values.get(slot)?.as_ref()
    }

    /// As [`envelope::string_at`]: a string, or a number in decimal.
    /// `None` also for a pointer that was not asked for.
    pub fn string_at(&self, pointer: &str) -> Option<String> {
        match self.at(pointer)? {
            Scalar::Text(text) => Some(text.clone().into_owned()),
            Scalar::Number(number) => Some(number.to_string()),
        }
    }

    /// As [`envelope::integer_at`]: a number, or a string of digits.
    pub fn integer_at(&self, pointer: &str) -> Option<i64> {
        match self.at(pointer)? {
            Scalar::Number(number) => number.as_i64(),
            Scalar::Text(text) => text.trim().parse().ok(),
        }
    }

    /// As [`envelope::rfc3339_at`]: an RFC 3339 time as unix seconds.
    pub fn rfc3339_at(&self, pointer: &str) -> Option<i64> {
        envelope::rfc3339_seconds(&self.string_at(pointer)?)
    }

    /// As [`envelope::required_id_at`]: the event id, which must be there.
    pub fn required_id_at(&self, pointer: &str) -> Result<Envelope, Refusal> {
        match self.string_at(pointer) {
            Some(id) => Envelope::with_id(id),
            None => Err(Refusal::missing_event_id(format!(
                "no event id at `{pointer}` in the body"
            ))),
        }
    }
}

/// One pointer still to be followed: its slot in the answer, and what is
/// left of it below the value being read (`""`: that value itself).
#[derive(Debug, Clone, Copy)]
struct Wanted<'p> {
    slot: usize,
    rest: &'p str,
}

impl<'p> Wanted<'p> {
    /// `None` for a pointer that cannot match anything (it does not start
    /// with `/` and is not `""`), as `Value::pointer` answers.
    fn new(slot: usize, pointer: &'p str) -> Option<Self> {
        (pointer.is_empty() || pointer.starts_with('/')).then_some(Wanted {
            slot,
            rest: pointer,
        })
    }

    fn is_here(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next reference token (still escaped), and the pointer below it.
    fn step(&self) -> Option<(&'p str, &'p str)> {
        let below = self.rest.strip_prefix('/')?;
        Some(match below.find('/') {
            Some(end) => (&below[..end], &below[end..]),
            None => (below, ""),
        })
    }

    /// The pointer below `key`, if this one goes through it.
    fn below_key(&self, key: &str) -> Option<Wanted<'p>> {
        let (token, rest) = self.step()?;
        let matches = if token.contains('~') {
            token.replace("~1", "/").replace("~0", "~") == key
        } else {
            token == key
        };
        matches.then_some(Wanted {
            slot: self.slot,
            rest,
        })
    }

    /// The pointer below array element `index`, if this one goes through it.
    fn below_index(&self, index: usize) -> Option<Wanted<'p>> {
        let (token, rest) = self.step()?;
        (array_index(token) == Some(index)).then_some(Wanted {
            slot: self.slot,
            rest,
        })
    }
}

/// An array index as `Value::pointer` reads one: digits, no sign, no
/// leading zero.
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// A value some pointers go into or stop at. Each pointer's slot was
/// cleared before this value is read, so a key given twice counts as its
/// last occurrence.
struct Node<'w, 'v, 'b, 'p> {
    wanted: &'w [Wanted<'p>],
    values: &'v mut [Option<Scalar<'b>>],
}

impl Node<'_, '_, '_, '_> {
    fn clear(&mut self, below: &[Wanted<'_>]) {
        for wanted in below {
            if let Some(value) = self.values.get_mut(wanted.slot) {
                *value = None;
            }
        }
    }
}

impl<'b> Node<'_, '_, 'b, '_> {
    fn found(&mut self, scalar: Scalar<'b>) {
        for wanted in self.wanted.iter().filter(|wanted| wanted.is_here()) {
            if let Some(value) = self.values.get_mut(wanted.slot) {
                *value = Some(scalar.clone());
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_, 'de, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_, 'de, '_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(mut self, number: i64) -> Result<(), E> {
        self.found(Scalar::Number(number.into()));
        Ok(())
    }

    fn visit_u64<E: de::Error>(mut self, number: u64) -> Result<(), E> {
        self.found(Scalar::Number(number.into()));
        Ok(())
    }

    fn visit_f64<E: de::Error>(mut self, number: f64) -> Result<(), E> {
        // As a `Value` reads it: a float that is no `Number` is null.
        if let Some(number) = serde_json::Number::from_f64(number) {
            self.found(Scalar::Number(number));
        }
        Ok(())
    }

    fn visit_borrowed_str<E: de::Error>(mut self, text: &'de str) -> Result<(), E> {
        self.found(Scalar::Text(Cow::Borrowed(text)));
        Ok(())
    }

    fn visit_str<E: de::Error>(mut self, text: &str) -> Result<(), E> {
        if self.wanted.iter().any(Wanted::is_here) {
            self.found(Scalar::Text(Cow::Owned(text.to_owned())));
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(below) = map.next_key_seed(KeyBelow {
            wanted: self.wanted,
        })? {
            if below.is_empty() {
                map.next_value::<Skip>()?;
            } else {
                self.clear(&below);
                map.next_value_seed(Node {
                    wanted: &below,
                    values: &mut *self.values,
                })?;
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            let below: Vec<Wanted<'_>> = self
                .wanted
                .iter()
                .filter_map(|wanted| wanted.below_index(index))
                .collect();
            let more = if below.is_empty() {
                seq.next_element::<Skip>()?.is_some()
            } else {
                self.clear(&below);
                seq.next_element_seed(Node {
                    wanted: &below,
                    values: &mut *self.values,
                })?
                .is_some()
            };
            if !more {
                return Ok(());
            }
            index += 1;
        }
    }
}

/// A map key, read as the pointers that go below it (none, for most keys:
/// then nothing is allocated).
struct KeyBelow<'w, 'p> {
    wanted: &'w [Wanted<'p>],
}

impl<'de, 'p> DeserializeSeed<'de> for KeyBelow<'_, 'p> {
    type Value = Vec<Wanted<'p>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de, 'p> Visitor<'de> for KeyBelow<'_, 'p> {
    type Value = Vec<Wanted<'p>>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self
            .wanted
            .iter()
            .filter_map(|wanted| wanted.below_key(key))
            .collect())
    }
}

/// A value no pointer goes into: parsed in full (so it is checked as a
/// `Value` would be) and dropped, without allocating.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the `Value` readers answer for `pointer`: (string, integer).
    fn by_value(body: &[u8], pointer: &str) -> Option<(Option<String>, Option<i64>)> {
        let value = envelope::json(body).ok()?;
        Some((
            envelope::string_at(&value, pointer),
            envelope::integer_at(&value, pointer),
        ))
    }

    fn by_fields(body: &[u8], pointer: &str) -> Option<(Option<String>, Option<i64>)> {
        let pointers = [pointer];
        let fields = JsonFields::read(body, &pointers).ok()?;
        Some((fields.string_at(pointer), fields.integer_at(pointer)))
    }

    /// Every pointer over every body answers as the `Value` readers do.
    fn agree(bodies: &[&[u8]], pointers: &[&str]) {
        for body in bodies {
            for pointer in pointers {
                assert_eq!(
                    by_fields(body, pointer),
                    by_value(body, pointer),
                    "{pointer} of {}",
                    String::from_utf8_lossy(body)
                );
            }
            let fields = JsonFields::read(body, pointers);
            assert_eq!(fields.is_ok(), envelope::json(body).is_ok());
            if let (Ok(fields), Ok(value)) = (fields, envelope::json(body)) {
                for pointer in pointers {
                    assert_eq!(
                        fields.string_at(pointer),
                        envelope::string_at(&value, pointer),
                        "{pointer} of {}, read together",
                        String::from_utf8_lossy(body)
                    );
                }
            }
        }
    }

    const POINTERS: &[&str] = &[
        "",
        "/id",
        "/type",
        "/created",
        "/data/object/id",
        "/data/object",
        "/data",
        "/items/1/id",
        "/items/01/id",
        "/items/+1/id",
        "/items/10",
        "/a~1b",
        "/m~0n",
        "/",
        "id",
        "/n",
    ];

    #[test]
    fn fields_read_as_the_value_readers_read_them() {
        agree(
            &[
                br#"{"id":"evt_1","type":"invoice.paid","created":1700000000,"data":{"object":{"id":"in_1"}}}"#,
                br#"{"id":12,"created":"1700000000","data":{"object":{"id":34.5}}}"#,
                br#"{"id":18446744073709551615,"created":-3,"n":1e3}"#,
                br#"{"id":"a\"b\u00e9\n","type":"\ud83d\ude00"}"#,
                br#"{"id":true,"type":null,"created":{},"data":[]}"#,
                br#"{"items":[{"id":"x"},{"id":"y"},{"id":"z"}]}"#,
                br#"{"a/b":"slash","m~n":"tilde","":"empty key"}"#,
                br#""top-level string""#,
                br#"42"#,
                br#"[{"id":"in an array"}]"#,
                br#"  {"id" : "spaces" }  "#,
            ],
            POINTERS,
        );
    }

    #[test]
    fn a_key_given_twice_counts_as_its_last_occurrence() {
        agree(
            &[
                br#"{"id":"first","id":"second"}"#,
                br#"{"id":"first","id":{"x":1}}"#,
                br#"{"data":{"object":{"id":"first"}},"data":{"object":{}}}"#,
                br#"{"data":{"object":{"id":"first"}},"data":{"object":{"id":"second"}}}"#,
                br#"{"data":{"object":{"id":"a"},"object":{"id":"b"}}}"#,
                br#"{"items":[{"id":"x"},{"id":"y"}],"items":[1]}"#,
            ],
            POINTERS,
        );
    }

    #[test]
    fn bodies_are_refused_exactly_when_a_value_refuses_them() {
        let deep_ok = format!("{}{}", "[".repeat(127), "]".repeat(127));
        let too_deep = format!("{}{}", "[".repeat(128), "]".repeat(128));
        let too_deep_inside = format!(
            r#"{{"id":"x","pad":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        agree(
            &[
                b"",
                b"{",
                br#"{"id":"x"} trailing"#,
                br#"{"id":"x",}"#,
                br#"{"id":"x","pad":1e400}"#,
                b"{\"id\":\"x\",\"pad\":\"\xff\xfe\"}",
                b"{\"id\":\"x\",\"pad\":\"ctl\x01\"}",
                br#"{"id":"x","pad":"\ud800"}"#,
                br#"{"id":"x","pad":"\q"}"#,
                br#"{"id":"x","pad":tru}"#,
                br#"{"id":"x","pad":-}"#,
                deep_ok.as_bytes(),
                too_deep.as_bytes(),
                too_deep_inside.as_bytes(),
            ],
            POINTERS,
        );
        assert!(JsonFields::read(too_deep_inside.as_bytes(), &["/id"]).is_err());
    }

    #[test]
    fn strings_without_escapes_are_borrowed_from_the_body() {
        let body = br#"{"id":"evt_1","type":"a\nb"}"#;
        let fields = JsonFields::read(body, &["/id", "/type"]).unwrap();
        assert!(matches!(
            fields.at("/id"),
            Some(Scalar::Text(Cow::Borrowed("evt_1")))
        ));
        assert_eq!(fields.string_at("/type").as_deref(), Some("a\nb"));
        assert_eq!(fields.string_at("/not-asked"), None);
    }

    #[test]
    fn the_envelope_helpers_answer_as_their_value_twins() {
        let body = br#"{"id":" evt_9 ","at":"2023-11-14T22:13:20Z","n":"12"}"#;
        let fields = JsonFields::read(body, &["/id", "/at", "/n", "/none"]).unwrap();
        let value = envelope::json(body).unwrap();
        assert_eq!(
            fields.required_id_at("/id"),
            envelope::required_id_at(&value, "/id")
        );
        assert_eq!(
            fields.required_id_at("/none"),
            envelope::required_id_at(&value, "/none")
        );
        assert_eq!(fields.rfc3339_at("/at"), Some(1_700_000_000));
        assert_eq!(fields.integer_at("/n"), Some(12));
    }
}
