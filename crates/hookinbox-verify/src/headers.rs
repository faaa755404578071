//! Request headers as the adapters see them: case-insensitive names, values
//! exactly as received.

/// An ordered, case-insensitive multimap of header names to values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    /// Names are stored lower-cased; values untouched.
    entries: Vec<(String, String)>,
}

impl Headers {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a header; a repeated name keeps every value in arrival order.
    pub fn append(&mut self, name: &str, value: impl Into<String>) {
        self.entries.push((name.to_ascii_lowercase(), value.into()));
    }

    /// The first value of `name`, compared case-insensitively.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.get_all(name).next()
    }

    /// The first value of `name`, trimmed, if it is not empty.
    pub fn get_nonempty(&self, name: &str) -> Option<&str> {
        self.get(name).map(str::trim).filter(|v| !v.is_empty())
    }

    /// Every value of `name`, in arrival order.
    pub fn get_all<'a, 'n>(&'a self, name: &'n str) -> impl Iterator<Item = &'a str> + use<'a, 'n> {
        self.entries
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// All entries, names lower-cased.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v.as_str()))
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
    fn nonempty_skips_blank_values() {
        let headers: Headers = [("X-A", "  "), ("X-B", " v ")].into_iter().collect();
        assert_eq!(headers.get_nonempty("x-a"), None);
        assert_eq!(headers.get_nonempty("x-b"), Some("v"));
    }
}
