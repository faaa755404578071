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
//!   any local account may be able to read the key. Once per file until
//!   the file changes (its mode, owner, or contents' modification time):
//!   a key reload re-reads every file, and the same warning on every
//!   SIGHUP would only be noise.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

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

/// Logs a WARN when `source` is a file that group or others may read, the
/// first time it is seen so (and again after the file changed).
pub fn warn_if_shared(source: &SecretSource, field: &str) {
    static WARNED: OnceLock<SharedFiles> = OnceLock::new();
    #[cfg(unix)]
    if let SecretSource::File(path) = source {
        use std::os::unix::fs::PermissionsExt;
        let Ok(metadata) = std::fs::metadata(path) else {
            return;
        };
        if WARNED
            .get_or_init(SharedFiles::default)
            .is_news(path, &metadata)
        {
            tracing::warn!(
                message = "A secret file is readable by group or others; make it private (chmod 600).",
                field = %source.field_name(field),
                file = %path.display(),
                mode = %format!("{:o}", metadata.permissions().mode() & 0o777)
            );
        }
    }
    #[cfg(not(unix))]
    let _ = (source, field, &WARNED);
}

/// The secret files warned about, each with what it looked like then.
#[derive(Default)]
struct SharedFiles {
    warned: Mutex<HashMap<PathBuf, FileState>>,
}

/// What makes a file "changed" for the warning: its mode, owner and
/// modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileState {
    mode: u32,
    uid: u32,
    modified: Option<SystemTime>,
}

impl SharedFiles {
    /// Whether `path` (with `metadata`) is shared and was not warned about
    /// in this state. A file that became private is forgotten, so
    /// loosening it again warns again.
    #[cfg(unix)]
    fn is_news(&self, path: &Path, metadata: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let mode = metadata.permissions().mode() & 0o777;
        let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
        if mode & 0o077 == 0 {
            warned.remove(path);
            return false;
        }
        let state = FileState {
            mode,
            uid: metadata.uid(),
            modified: metadata.modified().ok(),
        };
        warned.insert(path.to_owned(), state.clone()) != Some(state)
    }
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

    #[cfg(unix)]
    #[test]
    fn a_shared_file_is_news_once_per_change() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "a-secret-of-enough-length").unwrap();
        let chmod = |mode| {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            std::fs::metadata(&path).unwrap()
        };
        let files = SharedFiles::default();
        assert!(files.is_news(&path, &chmod(0o644)), "first seen");
        assert!(!files.is_news(&path, &chmod(0o644)), "a reload, no change");
        assert!(files.is_news(&path, &chmod(0o640)), "its mode changed");
        assert!(!files.is_news(&path, &chmod(0o640)));
        assert!(!files.is_news(&path, &chmod(0o600)), "private: no warning");
        assert!(files.is_news(&path, &chmod(0o644)), "shared again");
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
