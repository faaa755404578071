//! The keys that seal raw bodies and audit headers at rest (docs/architecture.md §6):
//! a key ring of 32-byte XChaCha20-Poly1305 keys by key id, and the id of
//! the active one.
//!
//! New records are sealed with the active key, and each record keeps the
//! id of the key that sealed it, so a record sealed under an older key
//! still opens while that key is in the ring. A rotation is: add the new
//! key and make it active, let `rewrap_batch` (on either store) re-seal
//! the old records under it, then drop the old key.
//!
//! Each key is a `SecretBox` (the `secrecy` crate: the one secret type of
//! hookinbox), zeroized when the ring is dropped; `Debug` shows the key
//! ids only, never a key.

use std::collections::BTreeMap;
use std::fmt;

use secrecy::{ExposeSecret, SecretBox};

/// Bytes in a key.
pub const KEY_BYTES: usize = 32;

/// Longest key id: it is stored with every record.
pub const MAX_KEY_ID_BYTES: usize = 64;

/// One key's bytes: redacted in `Debug`, zeroized on drop. Build one in
/// place (`SecretBox::init_with_mut`) so no copy is left on the stack.
pub type EncryptionKey = SecretBox<[u8; KEY_BYTES]>;

/// The key ring: key id → key, and the active key id.
pub struct EncryptionKeys {
    keys: BTreeMap<String, EncryptionKey>,
    active: String,
}

/// Why a key ring cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncryptionKeysError {
    /// A key id must be 1 to 64 visible ASCII characters.
    #[error("encryption key id `{0}`: use 1 to 64 visible ASCII characters")]
    InvalidKeyId(String),
    /// Two keys under one id.
    #[error("encryption key id `{0}` is given twice")]
    DuplicateKeyId(String),
}

impl EncryptionKeys {
    /// A ring holding one key, which is the active one.
    pub fn new(
        active_id: impl Into<String>,
        active_key: EncryptionKey,
    ) -> Result<EncryptionKeys, EncryptionKeysError> {
        let active = checked_key_id(active_id.into())?;
        let mut keys = BTreeMap::new();
        keys.insert(active.clone(), active_key);
        Ok(EncryptionKeys { keys, active })
    }

    /// Adds an older key, kept to open the records it sealed.
    pub fn with_key(
        mut self,
        id: impl Into<String>,
        key: EncryptionKey,
    ) -> Result<EncryptionKeys, EncryptionKeysError> {
        let id = checked_key_id(id.into())?;
        if self.keys.contains_key(&id) {
            return Err(EncryptionKeysError::DuplicateKeyId(id));
        }
        self.keys.insert(id, key);
        Ok(self)
    }

    /// The id of the key new records are sealed with.
    pub fn active_id(&self) -> &str {
        &self.active
    }

    /// The ids of every key in the ring, in order.
    pub fn key_ids(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    /// The key with this id, if the ring has it.
    pub(crate) fn key(&self, id: &str) -> Option<&[u8; KEY_BYTES]> {
        self.keys.get(id).map(ExposeSecret::expose_secret)
    }
}

fn checked_key_id(id: String) -> Result<String, EncryptionKeysError> {
    let valid =
        (1..=MAX_KEY_ID_BYTES).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic());
    if valid {
        Ok(id)
    } else {
        Err(EncryptionKeysError::InvalidKeyId(id))
    }
}

impl fmt::Debug for EncryptionKeys {
    /// The key ids and the active one; never a key's bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncryptionKeys")
            .field("active", &self.active)
            .field("key_ids", &self.keys.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_names_the_key_ids_and_never_the_key_bytes() {
        let keys = EncryptionKeys::new("k2", secrecy::SecretBox::new(Box::new([0xAB; 32])))
            .unwrap()
            .with_key("k1", secrecy::SecretBox::new(Box::new([0xCD; 32])))
            .unwrap();
        let debug = format!("{keys:?}");
        assert!(debug.contains("k1") && debug.contains("k2"), "{debug}");
        for leaked in ["171", "205", "ab", "AB", "cd", "CD"] {
            assert!(!debug.contains(leaked), "{debug}");
        }
        assert_eq!(keys.active_id(), "k2");
        assert_eq!(keys.key_ids().collect::<Vec<_>>(), ["k1", "k2"]);
        assert_eq!(keys.key("k1"), Some(&[0xCD; 32]));
        assert_eq!(keys.key(keys.active_id()), Some(&[0xAB; 32]));
        assert_eq!(keys.key("k3"), None);
    }

    #[test]
    fn key_ids_are_checked_and_unique() {
        for bad in ["", "has space", "tab\t", &"x".repeat(65), "é"] {
            assert_eq!(
                EncryptionKeys::new(bad, secrecy::SecretBox::new(Box::new([0; 32]))).unwrap_err(),
                EncryptionKeysError::InvalidKeyId(bad.to_owned())
            );
        }
        let keys = EncryptionKeys::new("k1", secrecy::SecretBox::new(Box::new([0; 32]))).unwrap();
        assert_eq!(
            keys.with_key("k1", secrecy::SecretBox::new(Box::new([1; 32])))
                .unwrap_err(),
            EncryptionKeysError::DuplicateKeyId("k1".into())
        );
    }
}
