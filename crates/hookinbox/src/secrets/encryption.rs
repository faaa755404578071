//! The configured key ring, read: each `[[encryption.key]]`'s base64 text
//! from its source, decoded to 32 bytes, into the store's
//! [`EncryptionKeys`]. Read once when the store is opened; a development
//! key file is created first when its key says `create_if_missing`, and
//! only for an empty database (`storage::open` asks first: a new key for
//! a database that holds data would leave every stored body unreadable;
//! docs/architecture.md §6).

use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine;
use hookinbox_store::encryption_keys::{EncryptionKey as KeyBytes, KEY_BYTES};
use hookinbox_store::EncryptionKeys;
use secrecy::{ExposeSecret, SecretBox, SecretSlice};

use crate::config::{ConfigError, Encryption, EncryptionKey, SecretSource};
use crate::secrets::key_file::{self, KeyFile};

/// Whether a missing development key file may be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingKeyFile {
    /// `serve`, `work`: create it when its key says `create_if_missing`.
    Create,
    /// Commands that only read: a missing file is an error.
    Refuse,
}

/// Reads the key ring. `Ok(None)` when no key is configured, which only
/// `allow_plaintext = true` permits; otherwise an error naming `encryption`.
pub fn load(
    encryption: &Encryption,
    missing: MissingKeyFile,
) -> Result<Option<Arc<EncryptionKeys>>, ConfigError> {
    let Some(active) = active_or_plaintext(encryption)? else {
        return Ok(None);
    };
    let mut active_key = None;
    let mut older = Vec::new();
    for (index, key) in encryption.keys.iter().enumerate() {
        let bytes = read_key(key, index, missing)?;
        if &key.id == active {
            active_key = Some(bytes);
        } else {
            older.push((key.id.as_str(), bytes));
        }
    }
    let Some(active_key) = active_key else {
        // The settings guarantee the active id names a key.
        return Err(ConfigError::invalid(
            "encryption.active",
            format!("`{active}` is not the id of an [[encryption.key]]"),
        ));
    };
    let ring_error = |error: hookinbox_store::EncryptionKeysError| {
        ConfigError::invalid("encryption.key", error.to_string())
    };
    let mut ring = EncryptionKeys::new(active.clone(), active_key).map_err(ring_error)?;
    for (id, bytes) in older {
        ring = ring.with_key(id, bytes).map_err(ring_error)?;
    }
    Ok(Some(Arc::new(ring)))
}

/// What `hookinbox config check` does: the refusal without a key, and
/// every key read and decoded, except a development key file that is
/// missing and would be created by `serve`.
pub fn check(encryption: &Encryption) -> Result<(), ConfigError> {
    active_or_plaintext(encryption)?;
    for (index, key) in encryption.keys.iter().enumerate() {
        if let (SecretSource::File(path), true) = (&key.value, key.create_if_missing) {
            if !path.exists() {
                continue;
            }
        }
        read_key(key, index, MissingKeyFile::Refuse)?;
    }
    Ok(())
}

/// A development key file that is not there and that
/// [`MissingKeyFile::Create`] would make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbsentKeyFile {
    /// The key id.
    pub key_id: String,
    /// The setting naming the file (`encryption.key[N].value_file`).
    pub field: String,
    pub path: PathBuf,
}

impl AbsentKeyFile {
    /// Why it is not created: the database at `database` holds data, which
    /// a new key could not open.
    pub fn refusal(&self, database: &str) -> ConfigError {
        ConfigError::invalid(
            &self.field,
            format!(
                "encryption key `{}`: {} does not exist, and the database ({database}) already                  holds data sealed under the key it had; a new key would leave every stored body                  unreadable, so none is created. Restore the key file (a new key is only made                  for an empty database)",
                self.key_id,
                self.path.display()
            ),
        )
    }
}

/// The first `create_if_missing` key file that does not exist.
pub fn absent_key_file(encryption: &Encryption) -> Option<AbsentKeyFile> {
    encryption.keys.iter().enumerate().find_map(|(index, key)| {
        match (&key.value, key.create_if_missing) {
            (SecretSource::File(path), true) if !path.exists() => Some(AbsentKeyFile {
                key_id: key.id.clone(),
                field: format!("{}_file", EncryptionKey::field(index)),
                path: path.clone(),
            }),
            _ => None,
        }
    })
}

/// The active key id; `None` when there is no key and plaintext is allowed.
fn active_or_plaintext(encryption: &Encryption) -> Result<Option<&String>, ConfigError> {
    match &encryption.active {
        Some(active) => Ok(Some(active)),
        None if encryption.allow_plaintext => Ok(None),
        None => Err(ConfigError::invalid(
            "encryption",
            "no [[encryption.key]] is configured, so bodies and audit headers would be \
             stored in plaintext: add a key (value_env or value_file, 32 bytes in base64), \
             or set encryption.allow_plaintext = true",
        )),
    }
}

/// One key's 32 bytes, from its base64 text.
fn read_key(
    key: &EncryptionKey,
    index: usize,
    missing: MissingKeyFile,
) -> Result<KeyBytes, ConfigError> {
    let field = EncryptionKey::field(index);
    if let (SecretSource::File(path), true, MissingKeyFile::Create) =
        (&key.value, key.create_if_missing, missing)
    {
        let made = key_file::create_if_missing(path).map_err(|error| {
            ConfigError::invalid(
                format!("{field}_file"),
                format!("cannot create {}: {error}", path.display()),
            )
        })?;
        if made == KeyFile::Created {
            tracing::warn!(
                message = "Created a new encryption key file (create_if_missing): keep it; \
                           without it the stored bodies cannot be read.",
                key = %key.id,
                path = %path.display(),
            );
        }
    }
    let text = key.value.read(&field)?;
    let decoded: SecretSlice<u8> = base64::engine::general_purpose::STANDARD
        .decode(text.expose_secret().trim())
        .map_err(|_| {
            ConfigError::invalid(
                key.value.field_name(&field),
                format!("{} is not base64", key.value.describe()),
            )
        })?
        .into();
    let decoded = decoded.expose_secret();
    if decoded.len() != KEY_BYTES {
        return Err(ConfigError::invalid(
            key.value.field_name(&field),
            format!(
                "{} holds {} bytes; a key is {KEY_BYTES} bytes (base64)",
                key.value.describe(),
                decoded.len()
            ),
        ));
    }
    Ok(SecretBox::init_with_mut(|bytes: &mut [u8; KEY_BYTES]| {
        bytes.copy_from_slice(decoded)
    }))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config;

    fn encryption(toml: &str) -> Encryption {
        let text = format!(
            "{toml}\n[[endpoint]]\nid = \"lab\"\nprovider = \"lab\"\n[[endpoint.secret]]\nversion = \"1\"\nvalue = \"s\"\n"
        );
        config::parse(&text, Path::new("/nonexistent"))
            .unwrap()
            .encryption
    }

    fn error(encryption: &Encryption) -> String {
        load(encryption, MissingKeyFile::Refuse)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn no_key_is_refused_unless_plaintext_is_allowed() {
        let refused = error(&encryption(""));
        assert!(refused.starts_with("encryption: "), "{refused}");
        let allowed = encryption("[encryption]\nallow_plaintext = true");
        assert!(load(&allowed, MissingKeyFile::Refuse).unwrap().is_none());
    }

    #[test]
    fn keys_are_32_bytes_of_base64_and_errors_name_the_field() {
        let k1 = base64::engine::general_purpose::STANDARD.encode([1u8; 32]);
        let k2 = base64::engine::general_purpose::STANDARD.encode([2u8; 32]);
        let ring = load(
            &encryption(&format!(
                "[encryption]\nactive = \"k2\"\n[[encryption.key]]\nid = \"k1\"\nvalue = \"{k1}\"\n[[encryption.key]]\nid = \"k2\"\nvalue = \"{k2}\"\n"
            )),
            MissingKeyFile::Refuse,
        )
        .unwrap()
        .unwrap();
        assert_eq!(ring.active_id(), "k2");
        assert_eq!(ring.key_ids().collect::<Vec<_>>(), ["k1", "k2"]);

        let short = base64::engine::general_purpose::STANDARD.encode([1u8; 16]);
        let message = error(&encryption(&format!(
            "[encryption]\nactive = \"k1\"\n[[encryption.key]]\nid = \"k1\"\nvalue = \"{k1}\"\n[[encryption.key]]\nid = \"k2\"\nvalue = \"{short}\"\n"
        )));
        assert!(
            message.starts_with("encryption.key[1].value: "),
            "{message}"
        );
        assert!(message.contains("16 bytes"), "{message}");
        assert!(!message.contains(&short), "{message}");

        let missing = error(&encryption(
            "[[encryption.key]]\nid = \"k1\"\nvalue_file = \"missing.key\"\n",
        ));
        assert!(
            missing.starts_with("encryption.key[0].value_file: "),
            "{missing}"
        );
        let not_base64 = error(&encryption(
            "[[encryption.key]]\nid = \"k1\"\nvalue = \"not base64!\"\n",
        ));
        assert!(
            not_base64.starts_with("encryption.key[0].value: "),
            "{not_base64}"
        );
    }

    #[test]
    fn a_missing_development_key_file_is_created_only_when_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.key");
        let settings = Encryption {
            active: Some("dev".into()),
            allow_plaintext: false,
            keys: vec![EncryptionKey {
                id: "dev".into(),
                value: SecretSource::File(path.clone()),
                create_if_missing: true,
            }],
        };
        assert!(error(&settings).starts_with("encryption.key[0].value_file: "));
        assert!(!path.exists());
        let ring = load(&settings, MissingKeyFile::Create).unwrap().unwrap();
        assert_eq!(ring.active_id(), "dev");
        assert!(path.exists());
    }
}
