//! Request headers as the adapters see them: case-insensitive names, values
//! exactly as received.
//!
//! The map remembers which names were looked up ([`Headers::looked_up`]).
//! That is how the service knows, without a second hand-kept list per
//! provider, which headers a verification depended on (the signature, the
//! timestamp, the event id and type): exactly the ones to keep with a stored
//! request so that `hookinbox verify` can check it again offline.

use std::sync::atomic::{AtomicBool, Ordering};

/// An ordered, case-insensitive multimap of header names to values.
#[derive(Default)]
pub struct Headers {
    /// Names are stored lower-cased; values untouched.
    entries: Vec<Entry>,
}

#[derive(Default)]
struct Entry {
    name: String,
    value: String,
    /// Set once a lookup asked for this entry's name.
    looked_up: AtomicBool,
}

impl Clone for Entry {
    fn clone(&self) -> Self {
        Entry {
            name: self.name.clone(),
            value: self.value.clone(),
            looked_up: AtomicBool::new(self.looked_up.load(Ordering::Relaxed)),
        }
    }
}

impl Clone for Headers {
    fn clone(&self) -> Self {
        Headers {
            entries: self.entries.clone(),
        }
    }
}

/// Equality is over names and values; what was looked up does not count.
impl PartialEq for Headers {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Headers {}

impl std::fmt::Debug for Headers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Headers")
            .field("entries", &self.iter().collect::<Vec<_>>())
            .finish()
    }
}

impl Headers {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a header; a repeated name keeps every value in arrival order.
    pub fn append(&mut self, name: &str, value: impl Into<String>) {
        self.entries.push(Entry {
            name: name.to_ascii_lowercase(),
            value: value.into(),
            looked_up: AtomicBool::new(false),
        });
    }

    /// The first value of `name`, compared case-insensitively.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.get_all(name).next()
    }

    /// The first value of `name`, trimmed, if it is not empty.
    pub fn get_nonempty(&self, name: &str) -> Option<&str> {
        self.get(name).map(str::trim).filter(|v| !v.is_empty())
    }

    /// Every value of `name`, in arrival order. Marks every entry of that
    /// name as looked up, whether or not the caller reads them all.
    pub fn get_all<'a, 'n>(&'a self, name: &'n str) -> impl Iterator<Item = &'a str> + use<'a, 'n> {
        for entry in &self.entries {
            if entry.name.eq_ignore_ascii_case(name) {
                entry.looked_up.store(true, Ordering::Relaxed);
            }
        }
        self.entries
            .iter()
            .filter(move |entry| entry.name.eq_ignore_ascii_case(name))
            .map(|entry| entry.value.as_str())
    }

    /// All entries, names lower-cased. Iterating marks nothing as looked up.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .map(|entry| (entry.name.as_str(), entry.value.as_str()))
    }

    /// The entries whose name some lookup ([`Headers::get`] and its
    /// siblings) asked for, in arrival order, names lower-cased. After
    /// [`crate::Verifier::verify`], these are the headers the verification
    /// read: the signature, the timestamp, and the event id and type where
    /// the provider sends them in headers.
    pub fn looked_up(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .filter(|entry| entry.looked_up.load(Ordering::Relaxed))
            .map(|entry| (entry.name.as_str(), entry.value.as_str()))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<N: AsRef<str>, V: Into<String>> FromIterator<(N, V)> for Headers {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        let mut headers = Headers::new();
        for (name, value) in iter {
            headers.append(name.as_ref(), value);
        }
        headers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_ignores_case_and_keeps_order() {
        let headers: Headers = [("Stripe-Signature", "a"), ("stripe-signature", "b")]
            .into_iter()
            .collect();
        assert_eq!(headers.get("STRIPE-SIGNATURE"), Some("a"));
        assert_eq!(
            headers.get_all("stripe-signature").collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(headers.get("x-other"), None);
    }

    #[test]
    fn lookups_are_remembered_by_name() {
        let headers: Headers = [("X-Sig", "a"), ("X-Other", "b"), ("x-sig", "c")]
            .into_iter()
            .collect();
        assert_eq!(headers.looked_up().count(), 0);
        assert_eq!(headers.get("X-SIG"), Some("a"));
        assert_eq!(headers.get("x-absent"), None);
        let _ = headers.iter().count();
        assert_eq!(
            headers.looked_up().collect::<Vec<_>>(),
            [("x-sig", "a"), ("x-sig", "c")]
        );
        assert_eq!(headers.clone().looked_up().count(), 2);
    }

    #[test]
    fn nonempty_skips_blank_values() {
        let headers: Headers = [("X-A", "  "), ("X-B", " v ")].into_iter().collect();
        assert_eq!(headers.get_nonempty("x-a"), None);
        assert_eq!(headers.get_nonempty("x-b"), Some("v"));
    }
}
