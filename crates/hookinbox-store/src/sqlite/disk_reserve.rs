//! The last bytes of the filesystem are kept for SQLite: the writer refuses
//! new bodies (503, retried by the provider) once writing them would leave
//! less than [`RESERVE_BYTES`] free (docs/architecture.md §4).
//!
//! Why: SQLite needs new space to delete anything. A checkpoint copies
//! the WAL's frames into the database file, which grows; only then can the
//! WAL start over; and a purge writes its deletions to the WAL before one
//! byte of a body is freed. When bodies took the filesystem's last byte,
//! every checkpoint and every purge failed with "database or disk is
//! full" until someone freed space by hand (issue #18). Refused a little
//! early, ingress answers the same 503 it would on a full disk, and the
//! reserve is there for the checkpoint, for the WAL up to its bound
//! (`checkpointer`), and for the purge that frees the bodies' segments.
//!
//! Only bodies are refused: leases and settlements (a few pages each)
//! still commit, and the probe of `/readyz` too. Measured on the payload
//! log's filesystem, where the bodies go; it is the database's unless the
//! `-payloads` directory was moved elsewhere, and then the bodies cannot
//! fill the database's disk anyway.

use std::path::{Path, PathBuf};

/// The default reserve: room for the WAL to reach its bound and for the
/// checkpoint to copy it into the database file.
pub(crate) const RESERVE_BYTES: u64 = super::checkpointer::WAL_BOUND_BYTES;

/// Where the reserve is measured, and whether the writer is under it.
#[derive(Debug)]
pub(crate) struct DiskReserve {
    dir: PathBuf,
    reserve: u64,
    /// The last batch with bodies was refused: the change is logged once.
    under: bool,
}

impl DiskReserve {
    /// `reserve` bytes kept on the filesystem holding `dir` (the payload
    /// log's).
    pub(crate) fn new(dir: &Path, reserve: u64) -> DiskReserve {
        DiskReserve {
            dir: dir.to_owned(),
            reserve,
            under: false,
        }
    }

    /// Whether `body_bytes` more may be written and leave the reserve free.
    /// A filesystem that cannot be asked is not a reason to refuse: the
    /// write itself says whether there is room.
    pub(crate) fn allows(&mut self, body_bytes: u64) -> bool {
        if self.reserve == 0 {
            return true;
        }
        let Ok(free) = free_bytes(&self.dir) else {
            return true;
        };
        let allows = leaves_reserve(free, body_bytes, self.reserve);
        if allows == self.under {
            self.under = !allows;
            if allows {
                tracing::info!(
                    message = "Disk space is back above the reserve; bodies are written again.",
                    free_bytes = free
                );
            } else {
                tracing::warn!(
                    message = "Disk nearly full; new bodies are refused so SQLite keeps room to checkpoint and purge.",
                    free_bytes = free,
                    reserve_bytes = self.reserve,
                );
            }
        }
        allows
    }
}

/// Whether writing `body_bytes` with `free` bytes free leaves `reserve`.
fn leaves_reserve(free: u64, body_bytes: u64, reserve: u64) -> bool {
    free >= body_bytes.saturating_add(reserve)
}

/// Bytes available to this user on the filesystem of `path`.
pub(crate) fn free_bytes(path: &Path) -> std::io::Result<u64> {
    let stat = rustix::fs::statvfs(path)?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_that_would_eat_into_the_reserve_are_refused() {
        assert!(leaves_reserve(100, 40, 60));
        assert!(!leaves_reserve(100, 41, 60));
        assert!(!leaves_reserve(10, 20, 0), "more than is free");
        assert!(leaves_reserve(10, 0, 10));
    }

    #[test]
    fn a_reserve_larger_than_the_disk_refuses_and_none_allows_all() {
        let dir = tempfile::tempdir().unwrap();
        assert!(DiskReserve::new(dir.path(), 0).allows(u64::MAX));
        assert!(DiskReserve::new(dir.path(), 1).allows(1));
        assert!(!DiskReserve::new(dir.path(), u64::MAX).allows(0));
        let mut missing = DiskReserve::new(&dir.path().join("gone"), u64::MAX);
        assert!(missing.allows(1), "unknown space: the write decides");
    }
}
