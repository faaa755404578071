//! Rules for endpoint secrets beyond "readable and not empty", applied
//! whenever a key ring is built (at start-up and on every key reload).
//!
//! - **Length.** A free-form HMAC secret (one whose key is the secret's own
//!   text: `lab`, `generic_hmac`, and every provider whose secret the
//!   verify crate takes as it is) shorter than
//!   [`MIN_FREE_FORM_HMAC_BYTES`] is refused, naming the field. Keys the
//!   verify crate decodes from a fixed format (hex, base64, `whsec_…`, a
//!   public key) are checked by that format instead. Only the service's
//!   configuration is held to this: the verify crate's signed vectors keep
//!   the secrets they were made with.
//! - **File modes.** A `value_file` that group or others may read is
//!   logged at WARN, naming the field and the file: it still works, but
//!   any local account may be able to read the key.

use hookinbox_verify::Key;
use secrecy::{ExposeSecret, SecretString};

use crate::config::{ConfigError, SecretSource};

/// Fewest bytes a free-form HMAC secret may have: 128 bits of key for a
/// random secret, and out of reach of a dictionary for a chosen one.
pub const MIN_FREE_FORM_HMAC_BYTES: usize = 16;

/// Refuses a free-form HMAC `key` made from `secret` when it is too short.
/// `field` is the setting the secret came from (never its value).
pub fn check_length(
    key: &Key,
    secret: &SecretString,
    source: &SecretSource,
    field: &str,
) -> Result<(), ConfigError> {
    let Key::Hmac(bytes) = key else {
        return Ok(());
    };
    let bytes = bytes.expose_secret();
    let secret = secret.expose_secret();
    let free_form = bytes == secret.as_bytes() || bytes == secret.trim().as_bytes();
    if free_form && bytes.len() < MIN_FREE_FORM_HMAC_BYTES {
        return Err(ConfigError::invalid(
            source.field_name(field),
            format!(
                "{} has {} bytes; an HMAC secret needs at least {MIN_FREE_FORM_HMAC_BYTES}",
                source.describe(),
                bytes.len()
            ),
        ));
    }
    Ok(())
}

/// Logs a WARN when `source` is a file that group or others may read.
pub fn warn_if_shared(source: &SecretSource, field: &str) {
    #[cfg(unix)]
    if let SecretSource::File(path) = source {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(metadata) = std::fs::metadata(path) {
            let mode = metadata.permissions().mode();
            if mode & 0o077 != 0 {
                tracing::warn!(
                    message = "A secret file is readable by group or others; make it private (chmod 600).",
                    field = %source.field_name(field),
                    file = %path.display(),
                    mode = %format!("{:o}", mode & 0o777)
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (source, field);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_free_form_hmac_secrets_are_refused_by_field() {
        let source = SecretSource::Env("LAB_SECRET".into());
        let short = "fifteen-bytes!!";
        let key = Key::hmac_from_utf8(short).unwrap();
        let error = check_length(&key, &short.into(), &source, "endpoint[0].secret[1].value")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("endpoint[0].secret[1].value_env: "),
            "{error}"
        );
        assert!(error.contains("has 15 bytes"), "{error}");
        assert!(!error.contains(short), "{error}");
        let long = "sixteen-bytes!!!";
        let key = Key::hmac_from_utf8(long).unwrap();
        assert!(check_length(&key, &long.into(), &source, "f").is_ok());
    }

    /// A key decoded from a fixed format is that format's business.
    #[test]
    fn decoded_and_non_hmac_keys_are_left_alone() {
        let source = SecretSource::Inline("x".into());
        let hex = "00112233";
        let key = Key::hmac_from_hex(hex).unwrap();
        assert!(check_length(&key, &hex.into(), &source, "f").is_ok());
        let token = Key::token_from_utf8("short").unwrap();
        assert!(check_length(&token, &"short".into(), &source, "f").is_ok());
    }
}
