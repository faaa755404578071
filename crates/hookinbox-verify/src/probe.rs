//! Requests without a body to verify that some providers send to check a
//! webhook URL before (or beside) their signed deliveries: Trello's `HEAD`
//! when a webhook is created, Nylas's and Dropbox's `GET ?challenge=…`,
//! Okta's `GET` with `X-Okta-Verification-Challenge`.
//!
//! They carry no signature — the provider has nothing to sign them with yet —
//! so they are answered by the adapter alone, with a fixed or echoed reply
//! and never stored: an answer to a probe proves nothing and changes
//! nothing. A provider whose adapter answers no probe gets the ordinary
//! `405 method` for anything but `POST`.

use crate::{Headers, Reply};

/// A bodiless request to a webhook URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe<'a> {
    /// The HTTP method, upper case (`GET`, `HEAD`).
    pub method: &'a str,
    /// The raw query string, without `?`.
    pub query: Option<&'a str>,
    /// The request's headers (Okta sends its challenge in one).
    pub headers: &'a Headers,
}

impl<'a> Probe<'a> {
    /// The percent-decoded value of the query parameter `name`, if present
    /// exactly once. A repeated parameter is ambiguous and reads as absent.
    pub fn query_parameter(&self, name: &str) -> Option<String> {
        let mut values = form_urlencoded::parse(self.query?.as_bytes())
            .filter(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned());
        let value = values.next()?;
        values.next().is_none().then_some(value)
    }

    /// The answer to a `GET ?{name}=<challenge>` whose challenge is echoed
    /// as the body (Nylas, Dropbox); `None` for any other probe.
    pub fn echo_get_parameter(&self, name: &str) -> Option<Reply> {
        if self.method != "GET" {
            return None;
        }
        echo_challenge(&self.query_parameter(name)?)
    }
}

/// The longest challenge echoed back.
pub const MAX_CHALLENGE_LEN: usize = 256;

/// A challenge echoed as `text/plain`, when it is short and plain: ASCII
/// letters, digits and `-_.~=+/` only, so the echo cannot carry markup. The
/// service adds `X-Content-Type-Options: nosniff` to every handshake answer.
pub fn echo_challenge(challenge: &str) -> Option<Reply> {
    let plain = !challenge.is_empty()
        && challenge.len() <= MAX_CHALLENGE_LEN
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~=+/".contains(&b));
    plain.then(|| Reply::text(challenge.as_bytes().to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_read_once_and_decoded() {
        let headers = Headers::new();
        let probe = |query| Probe {
            method: "GET",
            query: Some(query),
            headers: &headers,
        };
        assert_eq!(
            probe("challenge=a%2Bb&x=1").query_parameter("challenge"),
            Some("a+b".into())
        );
        assert_eq!(
            probe("challenge=a&challenge=b").query_parameter("challenge"),
            None
        );
        assert_eq!(probe("other=1").query_parameter("challenge"), None);
    }

    #[test]
    fn only_plain_challenges_are_echoed() {
        assert_eq!(echo_challenge("abc-123_X").unwrap().body, b"abc-123_X");
        for bad in ["", "<script>", "a b", &"a".repeat(MAX_CHALLENGE_LEN + 1)] {
            assert!(echo_challenge(bad).is_none(), "{bad}");
        }
    }
}
