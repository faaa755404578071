//! `[encryption]` and `[[encryption.key]]`, as parsed (the `*File`
//! structs) and checked: the key ring that
//! seals raw bodies and audit headers at rest (docs/architecture.md §6). Keys are held
//! as their sources; `crate::secrets::encryption` reads them when the store opens.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use hookinbox_store::encryption_keys::MAX_KEY_ID_BYTES;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::secret_source::{SecretFields, SecretSource};
use super::ConfigError;

/// The configured key ring, or plaintext explicitly allowed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Encryption {
    /// The id of the key new records are sealed with; `None` only when
    /// there is no key.
    pub active: Option<String>,
    /// No key is needed to start (bodies are then stored in plaintext).
    pub allow_plaintext: bool,
    /// The keys, in file order; ids unique.
    #[serde(rename = "key")]
    pub keys: Vec<EncryptionKey>,
}

/// One `[[encryption.key]]`.
#[derive(Debug, Clone, Serialize)]
pub struct EncryptionKey {
    /// Stored with every record the key seals.
    pub id: String,
    /// Where the key's base64 text comes from.
    pub value: SecretSource,
    /// A missing `value_file` is created with a new random key.
    pub create_if_missing: bool,
}

impl EncryptionKey {
    /// The key's field as the file spells it (`encryption.key[1].value`),
    /// for errors that happen when it is read.
    pub fn field(index: usize) -> String {
        format!("encryption.key[{index}].value")
    }
}

impl Encryption {
    pub(super) fn from_file(
        file: EncryptionFile,
        base_dir: &Path,
    ) -> Result<Encryption, ConfigError> {
        let mut ids = HashSet::new();
        let mut keys = Vec::with_capacity(file.key.len());
        for (index, key) in file.key.into_iter().enumerate() {
            let parent = format!("encryption.key[{index}]");
            let id_valid = (1..=MAX_KEY_ID_BYTES).contains(&key.id.len())
                && key.id.bytes().all(|b| b.is_ascii_graphic());
            if !id_valid {
                return Err(ConfigError::invalid(
                    format!("{parent}.id"),
                    "use 1 to 64 visible ASCII characters",
                ));
            }
            if !ids.insert(key.id.clone()) {
                return Err(ConfigError::invalid(
                    format!("{parent}.id"),
                    format!("`{}` is used by two keys", key.id),
                ));
            }
            let value = SecretSource::required(
                SecretFields {
                    name: "value",
                    inline: key.value.as_ref(),
                    env: key.value_env.as_deref(),
                    file: key.value_file.as_deref(),
                },
                &parent,
                base_dir,
            )?;
            if key.create_if_missing && !matches!(value, SecretSource::File(_)) {
                return Err(ConfigError::invalid(
                    format!("{parent}.create_if_missing"),
                    "applies to `value_file` only",
                ));
            }
            keys.push(EncryptionKey {
                id: key.id,
                value,
                create_if_missing: key.create_if_missing,
            });
        }
        let active = match (file.active, keys.as_slice()) {
            (Some(active), _) if keys.iter().any(|key| key.id == active) => Some(active),
            (Some(active), _) => {
                return Err(ConfigError::invalid(
                    "encryption.active",
                    format!("`{active}` is not the id of an [[encryption.key]]"),
                ))
            }
            (None, []) => None,
            (None, [only]) => Some(only.id.clone()),
            (None, _) => {
                return Err(ConfigError::invalid(
                    "encryption.active",
                    "is required with more than one [[encryption.key]]: the id new records are sealed with",
                ))
            }
        };
        Ok(Encryption {
            active,
            allow_plaintext: file.allow_plaintext,
            keys,
        })
    }
}

/// `[encryption]`: the key ring that seals raw bodies and audit headers at
/// rest.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EncryptionFile {
    /// The id of the key new records are sealed with; may be left out when
    /// there is one key.
    pub active: Option<String>,
    /// Start without any key, storing bodies and audit headers in plaintext.
    #[serde(default)]
    pub allow_plaintext: bool,
    /// The keys: the active one and older ones kept to open what they sealed.
    #[serde(default)]
    pub key: Vec<EncryptionKeyFile>,
}

/// `[[encryption.key]]`: one key of the ring, 32 bytes in base64.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EncryptionKeyFile {
    /// The key's id, stored with every record it seals (1–64 visible ASCII characters).
    pub id: String,
    /// The key itself (development only: prefer `value_env` or `value_file`).
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub value: Option<SecretString>,
    /// The name of an environment variable holding the key.
    pub value_env: Option<String>,
    /// A file holding the key (trailing newline trimmed; relative to the config file).
    pub value_file: Option<PathBuf>,
    /// With `value_file`: when the file is missing, `serve` creates it (0600)
    /// with a new random key. For development only.
    #[serde(default)]
    pub create_if_missing: bool,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn checked(toml: &str) -> Result<Encryption, String> {
        let text = format!(
            "{toml}\n[[endpoint]]\nid = \"lab\"\nprovider = \"lab\"\n[[endpoint.secret]]\nversion = \"1\"\nvalue = \"s\"\n"
        );
        super::super::parse(&text, Path::new("/etc/hookinbox"))
            .map(|settings| settings.encryption)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn one_key_is_active_by_default_and_files_resolve_against_the_config() {
        let one = checked(
            "[[encryption.key]]\nid = \"k1\"\nvalue_file = \"k1.key\"\ncreate_if_missing = true",
        )
        .unwrap();
        assert_eq!(one.active.as_deref(), Some("k1"));
        assert_eq!(
            one.keys[0].value,
            SecretSource::File("/etc/hookinbox/k1.key".into())
        );
        assert!(one.keys[0].create_if_missing);
        let none = checked("").unwrap();
        assert_eq!(none.active, None);
        assert!(!none.allow_plaintext);
    }

    #[test]
    fn errors_name_the_field() {
        let two = "[[encryption.key]]\nid = \"k1\"\nvalue_env = \"A\"\n[[encryption.key]]\nid = \"k2\"\nvalue_env = \"B\"\n";
        for (toml, field) in [
            (two.to_owned(), "encryption.active: "),
            (
                format!("[encryption]\nactive = \"k3\"\n{two}"),
                "encryption.active: ",
            ),
            (
                "[encryption]\nactive = \"k1\"\n".to_owned(),
                "encryption.active: ",
            ),
            (
                "[[encryption.key]]\nid = \"k1\"\nvalue_env = \"A\"\n[[encryption.key]]\nid = \"k1\"\nvalue_env = \"B\"\n".to_owned(),
                "encryption.key[1].id: ",
            ),
            (
                "[[encryption.key]]\nid = \"has space\"\nvalue_env = \"A\"\n".to_owned(),
                "encryption.key[0].id: ",
            ),
            (
                "[[encryption.key]]\nid = \"k1\"\n".to_owned(),
                "encryption.key[0].value: ",
            ),
            (
                "[[encryption.key]]\nid = \"k1\"\nvalue_env = \"A\"\ncreate_if_missing = true\n"
                    .to_owned(),
                "encryption.key[0].create_if_missing: ",
            ),
        ] {
            let error = checked(&toml).unwrap_err();
            assert!(error.starts_with(field), "{toml}\n→ {error}");
        }
    }
}
