//! The admin bearer token: where it comes from, what makes it acceptable,
//! and how a request proves it holds it.
//!
//! A weak token is worse than none because it looks like protection: an
//! empty one (`token = ""`, or an environment variable set to nothing) would
//! match a request that sends no header at all. So a token shorter than
//! [`MIN_TOKEN_CHARS`] stops start-up, and so does an admin address that
//! other machines can reach without any token (`config::Admin` refuses that).

use axum::http::header::InvalidHeaderValue;
use axum::http::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use subtle::ConstantTimeEq;

use crate::config::{ConfigError, SecretSource};

/// Fewest characters a token may have (16 random characters is about 95
/// bits from a base64 alphabet: out of reach of guessing over HTTP).
pub const MIN_TOKEN_CHARS: usize = 16;

/// A token that passed the start-up rules. Never printed.
#[derive(Debug, Clone)]
pub struct AdminToken(SecretString);

impl AdminToken {
    /// Reads the configured token from its source and applies the rules.
    /// Errors name the field the source was written in (`admin.token_env`)
    /// and never include the value.
    pub fn read(source: &SecretSource) -> Result<AdminToken, ConfigError> {
        let value = source.read("admin.token")?;
        AdminToken::checked(value, &source.field_name("admin.token"), &source.describe())
    }

    /// Applies the start-up rules to a token value; `what` names where the
    /// value came from in the message.
    fn checked(secret: SecretString, field: &str, what: &str) -> Result<AdminToken, ConfigError> {
        let value = secret.expose_secret();
        // A token goes after `Bearer ` in a header: visible ASCII only.
        if !value.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ConfigError::invalid(
                field,
                format!("{what} must be visible ASCII characters without spaces"),
            ));
        }
        if value.len() < MIN_TOKEN_CHARS {
            return Err(ConfigError::invalid(
                field,
                format!(
                    "{what} has {} characters; at least {MIN_TOKEN_CHARS} are required",
                    value.len()
                ),
            ));
        }
        Ok(AdminToken(secret))
    }

    /// The `Authorization` value that carries this token, for a client of
    /// the admin listener (`hookinbox keys`). Never log it.
    pub fn authorization(&self) -> Result<HeaderValue, InvalidHeaderValue> {
        let bearer = SecretString::from(format!("Bearer {}", self.0.expose_secret()));
        let mut value = HeaderValue::from_str(bearer.expose_secret())?;
        // Sensitive: `Debug` of the header, or of a request holding it,
        // shows `Sensitive` instead of the value.
        value.set_sensitive(true);
        Ok(value)
    }

    /// Whether an `Authorization` header carries this token. The scheme is
    /// case-insensitive (RFC 9110 §11.1); the token is compared in constant
    /// time.
    pub fn admits(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some(presented) = authorization.and_then(|v| bearer_credentials(v.as_bytes())) else {
            return false;
        };
        presented.ct_eq(self.0.expose_secret().as_bytes()).into()
    }
}

/// The credentials of a `Bearer` authorization value, any case of the scheme.
fn bearer_credentials(value: &[u8]) -> Option<&[u8]> {
    let split = value.iter().position(|b| *b == b' ')?;
    let (scheme, rest) = value.split_at(split);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let credentials = rest.trim_ascii();
    (!credentials.is_empty()).then_some(credentials)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(source: SecretSource) -> String {
        AdminToken::read(&source).unwrap_err().to_string()
    }

    const GOOD: &str = "0123456789abcdef";

    #[test]
    fn empty_short_or_spaced_tokens_are_refused_naming_the_field() {
        let inline = |token: &str| SecretSource::Inline(token.into());
        let empty = refusal(inline(""));
        assert!(empty.starts_with("admin.token: "), "{empty}");
        assert!(empty.contains("empty"), "{empty}");
        let short = refusal(inline("0123456789abcde"));
        assert!(short.contains("admin.token: ") && short.contains("15 characters"));
        assert!(
            !short.contains("0123456789abcde"),
            "the value leaked: {short}"
        );
        let spaced = refusal(inline("0123456789 abcdef"));
        assert!(spaced.contains("without spaces"), "{spaced}");
        assert!(AdminToken::read(&inline(GOOD)).is_ok());
    }

    #[test]
    fn an_empty_environment_variable_is_refused() {
        // Names unique to this test: the environment is process-wide.
        std::env::set_var("HOOKINBOX_TEST_ADMIN_TOKEN_EMPTY", "");
        let empty = refusal(SecretSource::Env("HOOKINBOX_TEST_ADMIN_TOKEN_EMPTY".into()));
        assert!(empty.starts_with("admin.token_env: "), "{empty}");
        assert!(
            empty.contains("HOOKINBOX_TEST_ADMIN_TOKEN_EMPTY"),
            "{empty}"
        );
        let unset = refusal(SecretSource::Env("HOOKINBOX_TEST_ADMIN_TOKEN_UNSET".into()));
        assert!(unset.contains("is not set"), "{unset}");
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_the_token_exact() {
        let token = AdminToken(GOOD.into());
        let admits = |value: &str| token.admits(Some(&HeaderValue::from_str(value).unwrap()));
        assert!(admits(&format!("Bearer {GOOD}")));
        assert!(admits(&format!("bearer {GOOD}")));
        assert!(admits(&format!("BEARER {GOOD}")));
        assert!(!admits(&format!("Basic {GOOD}")));
        assert!(!admits(&format!("Bearer {GOOD}x")));
        assert!(!admits(&format!("Bearer{GOOD}")));
        assert!(!admits("Bearer "));
        assert!(!token.admits(None));
    }
}
