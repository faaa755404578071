//! `/readyz`'s `disk` check: the filesystem holding the SQLite database
//! has at least `storage.min_free_disk_bytes` free for this user (what
//! `statvfs` calls available: blocks reserved for root do not count, as
//! they are not the service's to use). Below it, commits are about to fail
//! (the WAL grows between checkpoints, bodies go to the payload log), so
//! the process asks to be taken out of rotation before they do.

use std::path::{Path, PathBuf};

/// The floor, and where to measure it.
#[derive(Debug, Clone)]
pub struct DiskFloor {
    /// A directory on the filesystem to watch (the database's).
    pub directory: PathBuf,
    pub min_free_bytes: u64,
}

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskCheck {
    Enough,
    /// Fewer bytes free than the floor.
    Low {
        free_bytes: u64,
    },
    /// The filesystem could not be asked (the error's text, for the log).
    Unknown(String),
}

impl DiskFloor {
    /// The floor for a database file: measured in its directory.
    pub fn for_database(path: &Path, min_free_bytes: u64) -> DiskFloor {
        let directory = path
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_owned();
        DiskFloor {
            directory,
            min_free_bytes,
        }
    }

    pub fn check(&self) -> DiskCheck {
        match free_bytes(&self.directory) {
            Ok(free) if free < self.min_free_bytes => DiskCheck::Low { free_bytes: free },
            Ok(_) => DiskCheck::Enough,
            Err(error) => DiskCheck::Unknown(format!("{}: {error}", self.directory.display())),
        }
    }
}

/// Bytes available to an unprivileged user on the filesystem of `path`.
pub fn free_bytes(path: &Path) -> std::io::Result<u64> {
    let stat = rustix::fs::statvfs(path)?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_the_floor_is_low_and_at_or_above_it_is_enough() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(dir.path()).unwrap();
        assert!(free > 0);
        let floor = |min_free_bytes| DiskFloor {
            directory: dir.path().to_owned(),
            min_free_bytes,
        };
        assert_eq!(floor(0).check(), DiskCheck::Enough);
        assert_eq!(floor(free / 2).check(), DiskCheck::Enough);
        assert!(matches!(
            floor(u64::MAX).check(),
            DiskCheck::Low { free_bytes } if free_bytes < u64::MAX
        ));
        let missing = DiskFloor {
            directory: dir.path().join("gone"),
            min_free_bytes: 1,
        };
        assert!(matches!(missing.check(), DiskCheck::Unknown(_)));
    }

    #[test]
    fn a_database_is_measured_in_its_directory() {
        let floor = DiskFloor::for_database(Path::new("/var/lib/hookinbox/inbox.db"), 5);
        assert_eq!(floor.directory, Path::new("/var/lib/hookinbox"));
        let bare = DiskFloor::for_database(Path::new("inbox.db"), 5);
        assert_eq!(bare.directory, Path::new("."));
    }
}
