//! A development key file made on first start (`create_if_missing = true`
//! on an `[[encryption.key]]` with `value_file`): 32 random bytes from the
//! operating system, base64, in a file only its owner can read (0600),
//! created exclusively so two processes starting at once cannot each write
//! a different key.

use std::io::Write;
use std::path::Path;

use base64::Engine;
use rand::TryRngCore;

use hookinbox_store::encryption_keys::KEY_BYTES;

/// What became of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFile {
    /// It was there already.
    Existing,
    /// It was missing and now holds a new key.
    Created,
}

/// Creates `path` with a new key when it does not exist; leaves an
/// existing file as it is.
pub fn create_if_missing(path: &Path) -> std::io::Result<KeyFile> {
    if path.exists() {
        return Ok(KeyFile::Existing);
    }
    let mut key = zeroize::Zeroizing::new([0u8; KEY_BYTES]);
    rand::rngs::OsRng
        .try_fill_bytes(key.as_mut())
        .map_err(std::io::Error::other)?;
    let text = zeroize::Zeroizing::new(base64::engine::general_purpose::STANDARD.encode(*key));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = match options.open(path) {
        Ok(file) => file,
        // Another process made it between the check and the open: use theirs.
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            return Ok(KeyFile::Existing)
        }
        Err(error) => return Err(error),
    };
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    Ok(KeyFile::Created)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_gets_a_private_random_key_and_an_existing_one_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hookinbox.key");
        assert_eq!(create_if_missing(&path).unwrap(), KeyFile::Created);
        let text = std::fs::read_to_string(&path).unwrap();
        let key = base64::engine::general_purpose::STANDARD
            .decode(text.trim_end())
            .unwrap();
        assert_eq!(key.len(), KEY_BYTES);
        assert_ne!(key, [0u8; KEY_BYTES]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(create_if_missing(&path).unwrap(), KeyFile::Existing);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }
}
