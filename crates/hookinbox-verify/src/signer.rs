//! Signing as a provider would (the `sign` feature): the other half of each
//! adapter. [`crate::Adapter::sign`] turns a body, the endpoint's secret and a
//! time into the exact request the provider sends: its signature headers (and
//! timestamp, event-id and content-type headers), the query string where the
//! scheme signs the URL, and the body itself (unchanged, except for the two
//! schemes that carry their signature inside the body, Adyen and Mailgun).
//!
//! Only schemes with a shared secret have a signer: for Ed25519, ECDSA and RSA
//! providers the private key is the provider's own, so nobody else can sign as
//! them. The catalogue says which is which ([`crate::Signing`]), and the
//! crate's tests sign and verify every provider it marks symmetric.
//!
//! Like the verifiers, signers are pure: the time and the event id are passed
//! in, so the same inputs always give the same bytes.

use secrecy::ExposeSecret;

use crate::{Headers, Key, KeyError, SignatureHeader};

/// What a sender knows when it signs one request.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// The body to send, as the provider would send it.
    pub body: &'a [u8],
    /// The endpoint's secret, written as the provider shows it (and as
    /// hookinbox's configuration takes it).
    pub secret: &'a str,
    /// The signing time, unix seconds.
    pub now: i64,
    /// The event or delivery id, for schemes that carry it in a header
    /// (GitHub's `X-GitHub-Delivery`, Standard Webhooks' `webhook-id`);
    /// ignored where the id is in the body.
    pub event_id: &'a str,
}

/// One request as the provider sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedRequest {
    /// Headers in the order they were written, `Content-Type` first.
    pub headers: Vec<(String, String)>,
    /// The query string to append to the URL (without `?`), for schemes that
    /// put a signed parameter there (Twilio's `bodySHA256`).
    pub query: Option<String>,
    pub body: Vec<u8>,
}

impl SignedRequest {
    /// A request whose body is sent as `content_type`.
    pub fn new(content_type: &str, body: &[u8]) -> Self {
        SignedRequest {
            headers: vec![("Content-Type".to_owned(), content_type.to_owned())],
            query: None,
            body: body.to_vec(),
        }
    }

    /// A JSON request, the content type of most providers.
    pub fn json(body: &[u8]) -> Self {
        Self::new("application/json", body)
    }

    /// A form-encoded request (`application/x-www-form-urlencoded`).
    pub fn form(body: &[u8]) -> Self {
        Self::new("application/x-www-form-urlencoded", body)
    }

    /// Adds one header.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// Sets the query string (without `?`).
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// The value of a header, by name in any case.
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The headers as the verifier reads them.
    pub fn to_headers(&self) -> Headers {
        self.headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.clone()))
            .collect()
    }
}

/// Why a request could not be signed. Messages never contain the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    #[error(
        "`{provider}` has no signer: asymmetric (the provider signs with a private key only it holds)"
    )]
    Asymmetric { provider: &'static str },
    #[error("the secret cannot be used: {0}")]
    Key(#[from] KeyError),
    #[error("the secret is a public key, which verifies but cannot sign; give the shared secret")]
    PublicKey,
    #[error("{0} is not a time that can be written as a date")]
    Time(i64),
    #[error("the body is not what `{provider}` sends: {reason}")]
    Body {
        provider: &'static str,
        reason: String,
    },
}

/// The shared-secret bytes of a key, as the provider's sender keys its MAC
/// or sends its token.
pub fn shared_secret(key: &Key) -> Result<&[u8], SignError> {
    match key {
        Key::Hmac(secret) | Key::Token(secret) => Ok(secret.expose_secret()),
        Key::Ed25519(_) | Key::EcdsaP256(_) | Key::Rsa(_) => Err(SignError::PublicKey),
    }
}

/// The most common scheme: a JSON body whose HMAC is the value of one
/// header, keyed with the adapter's decoding of `secret`.
pub fn body_hmac(
    header: &SignatureHeader<'_>,
    key: &Key,
    outgoing: &Outgoing<'_>,
) -> Result<SignedRequest, SignError> {
    let signature = header.sign_hmac(shared_secret(key)?, &[outgoing.body]);
    Ok(SignedRequest::json(outgoing.body).header(header.name, signature))
}

/// A request authenticated by the secret itself, sent in `header` (GitLab's
/// `X-Gitlab-Token`, Telegram's secret token).
pub fn token(header: &str, key: &Key, outgoing: &Outgoing<'_>) -> Result<SignedRequest, SignError> {
    let token = String::from_utf8_lossy(shared_secret(key)?).into_owned();
    Ok(SignedRequest::json(outgoing.body).header(header, token))
}

/// The body's content type as the provider sends it: JSON when it parses
/// as JSON, else form-encoded (Slack's slash commands and interactivity,
/// Twilio's status callbacks).
pub fn json_or_form(body: &[u8]) -> SignedRequest {
    if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() {
        SignedRequest::json(body)
    } else {
        SignedRequest::form(body)
    }
}

/// `now` as a UTC date and time, `YYYY-MM-DDTHH:MM:SS`, for schemes that
/// send their timestamp as text; each adds the fraction and zone it writes.
pub fn utc_date_time(now: i64) -> Result<String, SignError> {
    let at = time::OffsetDateTime::from_unix_timestamp(now).map_err(|_| SignError::Time(now))?;
    Ok(format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    ))
}
