//! The unverified request as adapters read it.

use crate::Headers;

/// One received request, not yet verified. Everything here is attacker
/// controlled until [`crate::Verifier::verify`] says otherwise.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub headers: &'a Headers,
    /// The raw body bytes exactly as received; signatures are always checked
    /// over these, never over a re-serialised form.
    pub body: &'a [u8],
    /// The raw query string of the request URL, without `?` (some schemes,
    /// such as Twilio's `bodySHA256`, sign it).
    pub query: Option<&'a str>,
    /// When the receiver read the request (unix milliseconds), for the one
    /// kind of provider that sends no id at all and whose notifications are
    /// hints a retry may repeat (Dropbox): each delivery is then its own
    /// event. `None` where no receipt is known (an offline check without
    /// `--now`).
    pub received_at_ms: Option<i64>,
}

impl<'a> Request<'a> {
    pub fn new(headers: &'a Headers, body: &'a [u8]) -> Self {
        Request {
            headers,
            body,
            query: None,
            received_at_ms: None,
        }
    }

    pub fn with_query(mut self, query: Option<&'a str>) -> Self {
        self.query = query;
        self
    }

    pub fn with_received_at_ms(mut self, received_at_ms: Option<i64>) -> Self {
        self.received_at_ms = received_at_ms;
        self
    }

    /// The media type of the body (`Content-Type` without parameters), lower-cased.
    pub fn media_type(&self) -> Option<String> {
        self.headers.get("content-type").map(|value| {
            value
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
    }
}
