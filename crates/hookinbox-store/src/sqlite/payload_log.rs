//! The payload log: raw request bodies in append-only segment files beside
//! the database (`<db>-payloads/00000001.seg`, …), referenced from their
//! inbox row by (segment, offset, length).
//!
//! Why not a BLOB column: SQLite in WAL mode writes every page twice, once
//! to the WAL at commit and once more when the checkpoint copies it into the
//! database file. Bodies are most of the bytes an inbox writes (10 KiB on
//! average, up to 1 MiB), so that second copy was what bounded durable acks
//! per second on a disk doing ~240 MB/s. Here a body is written once.
//!
//! Durability order, inside one group commit: the batch's bodies are written
//! and `fdatasync`ed *before* SQLite's COMMIT, so a committed row never
//! points at bytes that are not on disk. A crash in between leaves bytes no
//! row references, which is harmless. The writer never appends to a segment
//! it did not create in this process: a restart starts a new segment, so a
//! torn tail from a crash is never extended.
//!
//! Only the writer thread writes ([`PayloadLog`]); readers open the segment
//! files read-only ([`PayloadFiles`]). A segment is created (`O_EXCL`) only
//! when a batch has bodies to write, so processes that share the database
//! but never accept events (`hookinbox work`, the CLI) create none, and two
//! writers can never end up appending to the same file.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{IoSlice, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// A new segment is started at the first batch boundary past this size.
const SEGMENT_BYTES: u64 = 64 << 20;

/// Where one body lives in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PayloadRef {
    pub segment: i64,
    pub offset: i64,
    pub len: i64,
}

/// The directory of the log for the database at `db_path`.
pub(crate) fn directory_for(db_path: &Path) -> PathBuf {
    let mut name = db_path.as_os_str().to_owned();
    name.push("-payloads");
    PathBuf::from(name)
}

fn segment_path(dir: &Path, segment: i64) -> PathBuf {
    dir.join(format!("{segment:08}.seg"))
}

/// The writer's end of the log: bodies reserved during a batch, written and
/// synced by [`PayloadLog::flush`] before the batch's COMMIT.
pub(crate) struct PayloadLog {
    dir: PathBuf,
    /// The segment new reservations go to; its file is created when the
    /// first batch with bodies is prepared.
    segment: i64,
    file: Option<File>,
    /// Bytes of the current segment already written and synced.
    durable_len: u64,
    /// Bodies reserved in the current batch, in offset order.
    pending: Vec<Bytes>,
    pending_len: u64,
    segment_bytes: u64,
    /// A write or sync of this segment failed: after a failed fsync the
    /// kernel may have dropped the dirty pages, so the next batch goes to a
    /// new segment rather than trusting this file again.
    failed: bool,
}

/// A point in the current batch to roll back to (see [`PayloadLog::mark`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PayloadMark {
    bodies: usize,
    bytes: u64,
}

impl PayloadLog {
    /// Opens the log in `dir` (created if missing) and starts a new segment
    /// after the highest one found.
    pub(crate) fn open(dir: &Path) -> std::io::Result<PayloadLog> {
        PayloadLog::open_with_segment_bytes(dir, SEGMENT_BYTES)
    }

    fn open_with_segment_bytes(dir: &Path, segment_bytes: u64) -> std::io::Result<PayloadLog> {
        if !dir.exists() {
            std::fs::create_dir_all(dir)?;
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                sync_directory(parent)?;
            }
        }
        Ok(PayloadLog {
            dir: dir.to_owned(),
            segment: highest_segment(dir)? + 1,
            file: None,
            durable_len: 0,
            pending: Vec::new(),
            pending_len: 0,
            segment_bytes,
            failed: false,
        })
    }

    /// Reserves space for `body` in this batch; it is written by the next
    /// [`flush`](PayloadLog::flush).
    pub(crate) fn reserve(&mut self, body: &Bytes) -> PayloadRef {
        let reference = PayloadRef {
            segment: self.segment,
            offset: (self.durable_len + self.pending_len) as i64,
            len: body.len() as i64,
        };
        self.pending_len += body.len() as u64;
        self.pending.push(body.clone());
        reference
    }

    /// The current end of the batch, to undo reservations made after it.
    pub(crate) fn mark(&self) -> PayloadMark {
        PayloadMark {
            bodies: self.pending.len(),
            bytes: self.pending_len,
        }
    }

    /// Drops the reservations made after `mark` (their op was rolled back,
    /// or the event turned out to be a duplicate).
    pub(crate) fn rollback_to(&mut self, mark: PayloadMark) {
        self.pending.truncate(mark.bodies);
        self.pending_len = mark.bytes;
    }

    /// Writes the batch's bodies at the end of the segment and syncs them.
    /// On error nothing of the batch counts as written (no committed row
    /// will point at it), and the next batch starts a new segment.
    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        if self.pending_len == 0 {
            // Nothing, or only empty bodies: no write, no sync.
            self.pending.clear();
            return Ok(());
        }
        let written = self.write_and_sync_pending();
        let batch_bytes = self.pending_len;
        self.pending.clear();
        self.pending_len = 0;
        if let Err(error) = written {
            self.failed = true;
            return Err(error);
        }
        self.durable_len += batch_bytes;
        Ok(())
    }

    fn write_and_sync_pending(&mut self) -> std::io::Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Err(std::io::Error::other(
                "payload segment not created for this batch",
            ));
        };
        file.seek(SeekFrom::Start(self.durable_len))?;
        let mut slices: Vec<IoSlice<'_>> = self.pending.iter().map(|b| IoSlice::new(b)).collect();
        let mut remaining = &mut slices[..];
        while !remaining.is_empty() {
            let n = file.write_vectored(remaining)?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            IoSlice::advance_slices(&mut remaining, n);
        }
        file.sync_data()
    }

    /// Called before each batch: moves on to a new segment once this one is
    /// full or after a failed write, and creates the segment's file when the
    /// batch has bodies (`with_bodies`). An error here (disk still full)
    /// fails the batch, and the next batch tries again.
    pub(crate) fn prepare_batch(&mut self, with_bodies: bool) -> std::io::Result<()> {
        self.pending.clear();
        self.pending_len = 0;
        if (self.failed || self.durable_len >= self.segment_bytes) && self.file.take().is_some() {
            self.segment += 1;
            self.durable_len = 0;
        }
        self.failed = false;
        if with_bodies && self.file.is_none() {
            let (segment, file) = create_segment(&self.dir, self.segment)?;
            self.segment = segment;
            self.file = Some(file);
        }
        Ok(())
    }
}

/// Creates a new, empty segment numbered `from` or the first free number
/// after it (another process, or an earlier failed attempt, may hold
/// `from`), and makes its name durable.
fn create_segment(dir: &Path, from: i64) -> std::io::Result<(i64, File)> {
    let mut segment = from;
    loop {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(segment_path(dir, segment))
        {
            Ok(file) => {
                sync_directory(dir)?;
                return Ok((segment, file));
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => segment += 1,
            Err(error) => return Err(error),
        }
    }
}

fn sync_directory(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The segment files in `dir`, with their numbers (none if `dir` does not
/// exist yet).
fn segments(dir: &Path) -> std::io::Result<Vec<(i64, std::fs::DirEntry)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry?;
        let number = entry
            .file_name()
            .to_str()
            .and_then(|n| n.strip_suffix(".seg"))
            .and_then(|n| n.parse::<i64>().ok());
        if let Some(number) = number {
            found.push((number, entry));
        }
    }
    Ok(found)
}

fn highest_segment(dir: &Path) -> std::io::Result<i64> {
    Ok(segments(dir)?.iter().map(|(n, _)| *n).max().unwrap_or(0))
}

/// Bytes in the log's segments, and how many there are.
pub(crate) fn usage(dir: &Path) -> std::io::Result<(u64, u64)> {
    let segments = segments(dir)?;
    let mut bytes = 0;
    for (_, entry) in &segments {
        bytes += entry.metadata()?.len();
    }
    Ok((bytes, segments.len() as u64))
}

/// Read-only access to the log's segments, with their files kept open.
pub(crate) struct PayloadFiles {
    dir: PathBuf,
    open: Mutex<HashMap<i64, Arc<File>>>,
}

/// Most segment files a reader keeps open.
const OPEN_SEGMENTS: usize = 64;

impl PayloadFiles {
    pub(crate) fn new(dir: PathBuf) -> PayloadFiles {
        PayloadFiles {
            dir,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// The bytes at `reference`.
    pub(crate) fn read(&self, reference: PayloadRef) -> std::io::Result<Bytes> {
        let (Ok(offset), Ok(len)) = (
            u64::try_from(reference.offset),
            usize::try_from(reference.len),
        ) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "negative payload offset or length",
            ));
        };
        if len == 0 {
            return Ok(Bytes::new());
        }
        let file = self.file(reference.segment)?;
        let mut bytes = vec![0; len];
        file.read_exact_at(&mut bytes, offset)?;
        Ok(Bytes::from(bytes))
    }

    fn file(&self, segment: i64) -> std::io::Result<Arc<File>> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| std::io::Error::other("payload file cache poisoned"))?;
        if let Some(file) = open.get(&segment) {
            return Ok(Arc::clone(file));
        }
        let file = Arc::new(File::open(segment_path(&self.dir, segment))?);
        if open.len() >= OPEN_SEGMENTS {
            open.clear();
        }
        open.insert(segment, Arc::clone(&file));
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Bytes {
        Bytes::copy_from_slice(text.as_bytes())
    }

    #[test]
    fn flushed_bodies_read_back_at_their_references() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PayloadLog::open(dir.path()).unwrap();
        log.prepare_batch(true).unwrap();
        let a = log.reserve(&body("first"));
        let b = log.reserve(&body("second body"));
        log.flush().unwrap();
        let c = log.reserve(&body("third"));
        log.flush().unwrap();
        assert_eq!((a.offset, b.offset, c.offset), (0, 5, 16));
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(a).unwrap(), body("first"));
        assert_eq!(files.read(b).unwrap(), body("second body"));
        assert_eq!(files.read(c).unwrap(), body("third"));
    }

    #[test]
    fn rolled_back_reservations_are_not_written_and_their_space_is_reused() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PayloadLog::open(dir.path()).unwrap();
        log.prepare_batch(true).unwrap();
        let kept = log.reserve(&body("kept"));
        let mark = log.mark();
        log.reserve(&body("duplicate, not written"));
        log.rollback_to(mark);
        let next = log.reserve(&body("next"));
        log.flush().unwrap();
        assert_eq!(next.offset, 4);
        let written = std::fs::read(segment_path(dir.path(), kept.segment)).unwrap();
        assert_eq!(written, b"keptnext");
    }

    #[test]
    fn a_reopened_log_starts_a_new_segment_and_keeps_the_old_one_readable() {
        let dir = tempfile::tempdir().unwrap();
        let first = {
            let mut log = PayloadLog::open(dir.path()).unwrap();
            log.prepare_batch(true).unwrap();
            let reference = log.reserve(&body("before restart"));
            log.flush().unwrap();
            // Bytes reserved but never flushed (a crash before COMMIT) are
            // simply absent.
            log.reserve(&body("lost"));
            reference
        };
        let mut log = PayloadLog::open(dir.path()).unwrap();
        log.prepare_batch(true).unwrap();
        let second = log.reserve(&body("after"));
        log.flush().unwrap();
        assert_eq!((first.segment, second.segment), (1, 2));
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(first).unwrap(), body("before restart"));
        assert_eq!(files.read(second).unwrap(), body("after"));
    }

    #[test]
    fn a_full_segment_is_followed_by_a_new_one_at_a_batch_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PayloadLog::open_with_segment_bytes(dir.path(), 8).unwrap();
        log.prepare_batch(true).unwrap();
        let a = log.reserve(&body("0123456789"));
        log.flush().unwrap();
        log.prepare_batch(true).unwrap();
        let b = log.reserve(&body("abc"));
        log.flush().unwrap();
        assert_eq!((a.segment, a.offset), (1, 0));
        assert_eq!((b.segment, b.offset), (2, 0));
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(a).unwrap(), body("0123456789"));
        assert_eq!(files.read(b).unwrap(), body("abc"));
    }

    #[test]
    fn two_writers_on_one_directory_never_share_a_segment() {
        let dir = tempfile::tempdir().unwrap();
        // Both see the same highest segment at open, as two processes
        // started together would.
        let mut first = PayloadLog::open(dir.path()).unwrap();
        let mut second = PayloadLog::open(dir.path()).unwrap();
        first.prepare_batch(true).unwrap();
        second.prepare_batch(true).unwrap();
        let a = first.reserve(&body("from the first"));
        let b = second.reserve(&body("from the second"));
        first.flush().unwrap();
        second.flush().unwrap();
        assert_ne!(a.segment, b.segment);
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(a).unwrap(), body("from the first"));
        assert_eq!(files.read(b).unwrap(), body("from the second"));
    }

    #[test]
    fn a_log_that_writes_no_bodies_creates_no_segment() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PayloadLog::open(dir.path()).unwrap();
        log.prepare_batch(false).unwrap();
        let empty = log.reserve(&Bytes::new());
        log.flush().unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(empty).unwrap(), Bytes::new());
    }

    #[test]
    fn reading_past_the_written_end_is_an_error_not_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PayloadLog::open(dir.path()).unwrap();
        log.prepare_batch(true).unwrap();
        let mut reference = log.reserve(&body("short"));
        log.flush().unwrap();
        reference.len = 100;
        let files = PayloadFiles::new(dir.path().to_owned());
        assert!(files.read(reference).is_err());
    }
}
