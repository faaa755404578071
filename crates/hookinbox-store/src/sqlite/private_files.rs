//! The SQLite store's files are private to the user it runs as, whatever
//! the process umask: the database and its `-wal` and `-shm` are 0600, the
//! payload directory `<db>-payloads/` is 0700 and every segment in it 0600.
//! They hold raw webhook bodies and request headers, so nobody else on the
//! machine should be able to read them.
//!
//! New files are created with these modes (a umask can only take bits away
//! from them). SQLite creates the `-wal` and `-shm` with the mode of the
//! database file, so creating the database file first, as 0600, makes them
//! private too.
//!
//! Existing files and directories with looser modes (from a build before
//! this one, or copied in by hand) are **fixed at start, with a warning**:
//! [`SqliteStore::open`](super::SqliteStore::open) chmods each one and logs
//! `tracing::warn!` with its path and old mode. Refusing to start instead
//! would turn an upgrade into an outage for a problem the store can repair
//! itself; fixing it silently would hide that the data was readable by
//! others until now. Only group and other bits count as loose: a mode
//! tighter than the target (0400) is left as it is.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The mode of the database, its `-wal` and `-shm`, and payload segments.
pub(crate) const PRIVATE_FILE_MODE: u32 = 0o600;
/// The mode of the payload directory.
pub(crate) const PRIVATE_DIR_MODE: u32 = 0o700;

/// The bits that make a mode loose: anything for the group or others.
const LOOSE_BITS: u32 = 0o077;

/// Creates the database file as 0600 if it does not exist yet (an empty
/// file is an empty SQLite database), so that SQLite, which gives the
/// `-wal` and `-shm` the database's mode, creates those private too.
pub(crate) fn create_database_file(path: &Path) -> std::io::Result<()> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .mode(PRIVATE_FILE_MODE)
        .open(path)
        .map(drop)
}

/// Opens a new file for writing, failing if it exists, as 0600.
pub(crate) fn create_new_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE_MODE)
        .open(path)
}

/// Creates a directory (and missing parents) as 0700.
pub(crate) fn create_directory(path: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR_MODE)
        .create(path)
}

/// The database's `-wal` and `-shm` beside it.
pub(crate) fn sidecar_files(db_path: &Path) -> [PathBuf; 2] {
    ["-wal", "-shm"].map(|suffix| {
        let mut name = db_path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    })
}

/// Makes `path` no looser than `mode` (0600 or 0700): when the group or
/// others have any bit, it is set to `mode` and a warning names the path
/// and its old mode. Returns the old mode when it was fixed; a path that
/// does not exist is left alone (`None`).
pub(crate) fn make_private(path: &Path, mode: u32) -> std::io::Result<Option<u32>> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let old_mode = metadata.permissions().mode() & 0o7777;
    if old_mode & LOOSE_BITS == 0 {
        return Ok(None);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    tracing::warn!(
        message = "A storage file was readable by other users; made private.",
        path = %path.display(),
        old_mode = %format!("{old_mode:04o}"),
        new_mode = %format!("{mode:04o}"),
    );
    Ok(Some(old_mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_loose_file_is_fixed_and_its_old_mode_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inbox.db");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(make_private(&path, PRIVATE_FILE_MODE).unwrap(), Some(0o644));
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(make_private(&path, PRIVATE_FILE_MODE).unwrap(), None);
    }

    #[test]
    fn a_tighter_mode_is_left_alone_and_a_missing_path_is_no_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("segment");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert_eq!(make_private(&path, PRIVATE_FILE_MODE).unwrap(), None);
        assert_eq!(mode_of(&path), 0o400);
        assert_eq!(
            make_private(&dir.path().join("absent"), PRIVATE_FILE_MODE).unwrap(),
            None
        );
    }

    #[test]
    fn new_files_and_directories_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("inbox.db");
        create_database_file(&db).unwrap();
        assert_eq!(mode_of(&db), 0o600);
        let payloads = dir.path().join("inbox.db-payloads");
        create_directory(&payloads).unwrap();
        assert_eq!(mode_of(&payloads), 0o700);
        let segment = payloads.join("00000001.seg");
        create_new_file(&segment).unwrap();
        assert_eq!(mode_of(&segment), 0o600);
        assert!(create_new_file(&segment).is_err(), "never an existing file");
    }
}
