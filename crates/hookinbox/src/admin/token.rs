//! The admin bearer token: where it comes from, what makes it acceptable,
//! and how a request proves it holds it.
//!
//! A weak token is worse than none because it looks like protection: an
//! empty one (`token = ""`, or an environment variable set to nothing) would
//! match a request that sends no header at all. So a token shorter than
//! [`MIN_TOKEN_CHARS`] stops start-up, and so does an admin address that
//! other machines can reach without any token.

use std::sync::Arc;

use axum::http::HeaderValue;
use subtle::ConstantTimeEq;

use crate::config::{AdminConfig, ConfigError};

/// Fewest characters a token may have (16 random characters is about 95
/// bits from a base64 alphabet: out of reach of guessing over HTTP).
pub const MIN_TOKEN_CHARS: usize = 16;

/// A token that passed the start-up rules. Never printed.
#[derive(Clone)]
pub struct AdminToken(Arc<str>);

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminToken([redacted])")
    }
}

impl AdminToken {
    /// The configured token (`token` or `token_env`), or `None` when there
    /// is none and `listen` is a loopback address. Errors name the field and
    /// never include the value.
    pub fn from_config(config: &AdminConfig) -> Result<Option<AdminToken>, ConfigError> {
        let token = match (&config.token, &config.token_env) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::invalid(
                    "admin.token",
                    "set `token` or `token_env`, not both",
                ))
            }
            (Some(token), None) => Some(AdminToken::checked(token, "admin.token", "it")?),
            (None, Some(name)) => {
                let value = std::env::var(name).map_err(|_| {
                    ConfigError::invalid(
                        "admin.token_env",
                        format!("environment variable `{name}` is not set or not UTF-8"),
                    )
                })?;
                let what = format!("environment variable `{name}`");
                Some(AdminToken::checked(&value, "admin.token_env", &what)?)
            }
            (None, None) => None,
        };
        if token.is_none() && !config.listen.ip().is_loopback() {
            return Err(ConfigError::invalid(
                "admin.token",
                format!(
                    "admin.listen {} is reachable from other machines (not a loopback \
                     address), so a token is required: set `token_env` (or `token`)",
                    config.listen
                ),
            ));
        }
        Ok(token)
    }

    /// Applies the start-up rules to a token value; `what` names where the
    /// value came from in the message.
    fn checked(value: &str, field: &str, what: &str) -> Result<AdminToken, ConfigError> {
        if value.is_empty() {
            return Err(ConfigError::invalid(
                field,
                format!("{what} is empty; an empty token would admit requests without one"),
            ));
        }
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
        Ok(AdminToken(Arc::from(value)))
    }

    /// Whether an `Authorization` header carries this token. The scheme is
    /// case-insensitive (RFC 9110 §11.1); the token is compared in constant
    /// time.
    pub fn admits(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some(presented) = authorization.and_then(|v| bearer_credentials(v.as_bytes())) else {
            return false;
        };
        presented.ct_eq(self.0.as_bytes()).into()
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

    fn admin(listen: &str, token: Option<&str>, token_env: Option<&str>) -> AdminConfig {
        let mut text = format!("listen = \"{listen}\"\n");
        if let Some(token) = token {
            text.push_str(&format!("token = \"{token}\"\n"));
        }
        if let Some(name) = token_env {
            text.push_str(&format!("token_env = \"{name}\"\n"));
        }
        toml::from_str(&text).expect("an admin section")
    }

    fn refusal(config: &AdminConfig) -> String {
        AdminToken::from_config(config).unwrap_err().to_string()
    }

    const GOOD: &str = "0123456789abcdef";

    #[test]
    fn empty_short_or_spaced_tokens_are_refused_naming_the_field() {
        let empty = refusal(&admin("127.0.0.1:9090", Some(""), None));
        assert!(empty.starts_with("admin.token: "), "{empty}");
        assert!(empty.contains("empty"), "{empty}");
        let short = refusal(&admin("127.0.0.1:9090", Some("0123456789abcde"), None));
        assert!(short.contains("admin.token: ") && short.contains("15 characters"));
        assert!(
            !short.contains("0123456789abcde"),
            "the value leaked: {short}"
        );
        let spaced = refusal(&admin("127.0.0.1:9090", Some("0123456789 abcdef"), None));
        assert!(spaced.contains("without spaces"), "{spaced}");
        assert!(
            AdminToken::from_config(&admin("127.0.0.1:9090", Some(GOOD), None))
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn an_empty_environment_variable_is_refused() {
        // Names unique to this test: the environment is process-wide.
        std::env::set_var("HOOKINBOX_TEST_ADMIN_TOKEN_EMPTY", "");
        let empty = refusal(&admin(
            "127.0.0.1:9090",
            None,
            Some("HOOKINBOX_TEST_ADMIN_TOKEN_EMPTY"),
        ));
        assert!(empty.starts_with("admin.token_env: "), "{empty}");
        assert!(
            empty.contains("HOOKINBOX_TEST_ADMIN_TOKEN_EMPTY"),
            "{empty}"
        );
        let unset = refusal(&admin(
            "127.0.0.1:9090",
            None,
            Some("HOOKINBOX_TEST_ADMIN_TOKEN_UNSET"),
        ));
        assert!(unset.contains("is not set"), "{unset}");
    }

    #[test]
    fn a_reachable_address_needs_a_token_a_loopback_one_does_not() {
        let exposed = refusal(&admin("0.0.0.0:9090", None, None));
        assert!(exposed.starts_with("admin.token: "), "{exposed}");
        assert!(exposed.contains("0.0.0.0:9090"), "{exposed}");
        assert!(AdminToken::from_config(&admin("[::1]:9090", None, None))
            .unwrap()
            .is_none());
        assert!(
            AdminToken::from_config(&admin("0.0.0.0:9090", Some(GOOD), None))
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_the_token_exact() {
        let token = AdminToken(Arc::from(GOOD));
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
