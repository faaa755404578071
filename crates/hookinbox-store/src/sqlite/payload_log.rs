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
//!
//! A segment's number is its identity, and is never used twice: each new
//! segment takes a number from the database first (`segment_numbers`), so
//! no process, before or after a restart, makes a file under the number of
//! one that was deleted. Readers keep segment files open, and a file
//! deleted by any process (retention here or in `hookinbox purge`) is
//! noticed by its link count: a read reopens rather than use it, and
//! [`PayloadFiles::close_deleted`] closes it, so its space is freed
//! (docs/architecture.md §6).
//!
//! A failing disk (full, or returning I/O errors) must not cost a file per
//! attempt: a segment that nothing durable is in yet is reused for the next
//! attempt, from offset 0; only a segment that already holds bodies of
//! earlier batches is left, once (see [`PayloadLog::prepare_batch`]). After
//! a failure the log also rests for a growing pause (`write_backoff`), in
//! which batches with bodies are refused without touching the disk.
//!
//! The directory is created 0700 and every segment 0600, whatever the
//! umask; looser ones found at open are fixed (`private_files`).
//!
//! Retention deletes whole segments once no row references them (`purge`),
//! the one this writer appends to included: the writer first leaves it
//! ([`PayloadLog::leave_current_segment`]), unless bodies of the batch in
//! progress are reserved in it. A writer whose segment was deleted all the
//! same (by another process's purge, while this writer's rows in it were
//! all purged) notices at its next batch, with or without bodies: the file
//! has no name any more, so the writer closes it and moves on to a new
//! segment instead of writing bytes nobody could read. Deleted between that
//! check and the write, the batch fails (503, retried). Sparse segments are
//! emptied by `compaction` first.

use std::collections::HashMap;
use std::fs::File;
use std::io::{IoSlice, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;

use super::private_files;
use super::segment_numbers::SegmentNumbers;
use super::write_backoff::WriteBackoff;

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
    /// `segment` was taken from `numbers` and is this log's to create; a
    /// failed create keeps it for the next attempt.
    allocated: bool,
    /// Where new segment numbers come from.
    numbers: SegmentNumbers,
    /// A number taken ahead, outside any write transaction, for the next
    /// segment: an op inside the writer's transaction (a purge, a
    /// compaction, a rewrap) that leaves the current segment opens the next
    /// one under it, since taking a number there would wait on this very
    /// writer's lock (see [`PayloadLog::ready_for_bodies`]).
    spare: Option<i64>,
    file: Option<File>,
    /// The segment's directory entry has been synced: until then a crash
    /// could lose the file's name, so no batch is written to it.
    name_durable: bool,
    /// Bytes of the current segment already written and synced.
    durable_len: u64,
    /// Bodies reserved in the current batch, in offset order.
    pending: Vec<Bytes>,
    pending_len: u64,
    segment_bytes: u64,
    /// A write or sync of this segment failed; the next batch decides
    /// whether the segment can be reused ([`PayloadLog::prepare_batch`]).
    failed: bool,
    /// Rests the disk after a failed write, create or sync.
    backoff: WriteBackoff,
    /// Tests: every write fails as on a full disk, after the bytes reached
    /// the file (the worst case: a partial write, then a failed fsync).
    #[cfg(test)]
    disk_full: bool,
}

/// A point in the current batch to roll back to (see [`PayloadLog::mark`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PayloadMark {
    bodies: usize,
    bytes: u64,
}

impl PayloadLog {
    /// Opens the log in `dir` (created if missing); its first batch with
    /// bodies starts a new segment, numbered by `numbers`.
    pub(crate) fn open(dir: &Path, numbers: SegmentNumbers) -> std::io::Result<PayloadLog> {
        PayloadLog::open_with_segment_bytes(dir, numbers, SEGMENT_BYTES)
    }

    fn open_with_segment_bytes(
        dir: &Path,
        numbers: SegmentNumbers,
        segment_bytes: u64,
    ) -> std::io::Result<PayloadLog> {
        if !dir.exists() {
            private_files::create_directory(dir)?;
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                sync_directory(parent)?;
            }
        }
        Ok(PayloadLog {
            dir: dir.to_owned(),
            // No segment yet: 0 is never a segment's number.
            segment: 0,
            allocated: false,
            numbers,
            spare: None,
            file: None,
            name_durable: false,
            durable_len: 0,
            pending: Vec::new(),
            pending_len: 0,
            segment_bytes,
            failed: false,
            backoff: WriteBackoff::default(),
            #[cfg(test)]
            disk_full: false,
        })
    }

    /// The segment whose file this writer has open, if any: the one a
    /// purge of this process must not delete. After [`leave_segment`]
    /// there is none until the next batch with bodies allocates a new
    /// number.
    ///
    /// [`leave_segment`]: PayloadLog::leave_segment
    pub(crate) fn open_segment(&self) -> Option<i64> {
        self.file.as_ref().map(|_| self.segment)
    }

    /// Whether a batch with bodies may be written at `now`: `false` for a
    /// while after a failed write, create or sync. The writer refuses such
    /// batches (503) without calling [`PayloadLog::prepare_batch`].
    pub(crate) fn accepts_bodies(&self, now: Instant) -> bool {
        self.backoff.allows(now)
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
    /// will point at it), and the next batch decides where to write
    /// ([`PayloadLog::prepare_batch`]). `now`: when the write ended, to
    /// start the pause after a failure.
    pub(crate) fn flush(&mut self, now: Instant) -> std::io::Result<()> {
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
            self.backoff.failed(now);
            return Err(error);
        }
        self.backoff.succeeded();
        self.durable_len += batch_bytes;
        Ok(())
    }

    fn write_and_sync_pending(&mut self) -> std::io::Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Err(std::io::Error::other(
                "payload segment not created for this batch",
            ));
        };
        if file.metadata()?.nlink() == 0 {
            return Err(std::io::Error::other(
                "payload segment was deleted while open (retention)",
            ));
        }
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
        #[cfg(test)]
        if self.disk_full {
            return Err(std::io::ErrorKind::StorageFull.into());
        }
        file.sync_data()
    }

    /// Called before each batch: moves on to a new segment once this one is
    /// full, decides where to write after a failed write, and creates the
    /// segment's file when the batch has bodies (`with_bodies`). An error
    /// here (disk still full) fails the batch and starts a pause; a later
    /// batch tries the same segment number again.
    pub(crate) fn prepare_batch(&mut self, with_bodies: bool, now: Instant) -> std::io::Result<()> {
        self.pending.clear();
        self.pending_len = 0;
        if self.failed {
            self.failed = false;
            self.recover_from_failed_write();
        } else if self.durable_len >= self.segment_bytes || self.segment_deleted() {
            self.leave_segment();
        }
        if with_bodies {
            self.create_segment_file(true)
                .inspect_err(|_| self.backoff.failed(now))?;
            if self.spare.is_none() {
                // Best effort: without a spare, an op that leaves the
                // segment mid-batch fails that batch (503) instead.
                self.spare = self.allocate_number().ok();
            }
        }
        Ok(())
    }

    /// Makes sure the current segment's file exists, for an op that
    /// reserves bodies after [`PayloadLog::leave_current_segment`]. It runs
    /// inside the writer's transaction, so a new segment takes the spare
    /// number (taking one from the database there would wait on the
    /// transaction's own lock); without a spare it fails. An error starts a
    /// pause, as in [`PayloadLog::prepare_batch`].
    pub(crate) fn ready_for_bodies(&mut self, now: Instant) -> std::io::Result<()> {
        self.create_segment_file(false)
            .inspect_err(|_| self.backoff.failed(now))
    }

    /// Leaves the current segment so that it can be deleted or compacted
    /// (docs/architecture.md §6); returns whether the writer no longer
    /// appends to it. Not while bodies of this batch are reserved in it
    /// (their rows will point there), nor while nothing is written in it
    /// (there is nothing to reclaim). The next segment's file is made
    /// ready at once, for the ops after this one in the batch: their
    /// bodies are reserved in it before the flush (best effort here: if it
    /// fails, the pause starts and the flush fails the batch).
    pub(crate) fn leave_current_segment(&mut self, now: Instant) -> bool {
        if !self.pending.is_empty() {
            return false;
        }
        if self.file.is_none() {
            // A file with this number belongs to another process.
            return true;
        }
        if self.durable_len == 0 {
            return false;
        }
        self.leave_segment();
        let _ = self.ready_for_bodies(now);
        true
    }

    /// After a failed write or sync. First the segment is cut back to its
    /// durable length: the failed batch's bytes are referenced by no row,
    /// and on a full disk they hold the space the retry needs (best effort:
    /// if this fails too, nothing reads past a referenced range, and a
    /// reused segment's next write overwrites them).
    ///
    /// A segment that holds bodies of earlier batches (committed rows may
    /// point at them) is then left: after a failed fsync the kernel may have
    /// marked the dirty pages clean without writing them, so this file is
    /// not trusted with more bytes. It is left once; if the failures go on,
    /// the next segment holds nothing durable and is reused.
    ///
    /// A segment with nothing durable in it is reused from offset 0: no row
    /// references any of it, and the next write dirties every page it
    /// covers again, so its fsync writes them all. Moving on to a new file
    /// instead is what made a full disk fill its directory with one empty
    /// segment per failed commit.
    fn recover_from_failed_write(&mut self) {
        let mut deleted = false;
        if let Some(file) = &self.file {
            let _ = file.set_len(self.durable_len);
            deleted = file.metadata().map(|m| m.nlink() == 0).unwrap_or(false);
        }
        if self.durable_len > 0 || deleted {
            self.leave_segment();
        }
    }

    /// Whether the current segment's file was deleted (by retention in
    /// another process): leaving it at the next batch, even one without
    /// bodies (a lease, a settlement, the readiness probe), closes it, so
    /// its space is freed while no event arrives, and the next event goes
    /// to a new segment instead of failing its write. The check under the
    /// write lock (`write_and_sync_pending`) still decides for a write.
    fn segment_deleted(&self) -> bool {
        self.file
            .as_ref()
            .is_some_and(|file| file.metadata().is_ok_and(|m| m.nlink() == 0))
    }

    /// Closes the current segment; the next batch with bodies creates a
    /// new one, under a new number. Also called by the writer when it
    /// refuses bodies for want of space (`disk_reserve`): a closed segment
    /// can be deleted by a purge of this process, and its space returns at
    /// once.
    pub(crate) fn leave_segment(&mut self) {
        if self.file.take().is_some() {
            self.allocated = false;
            self.durable_len = 0;
        }
    }

    /// Makes sure the current segment's file exists and its name is
    /// durable. A failure keeps what was done: a number taken is used by
    /// the next attempt, and a file created but not yet synced into its
    /// directory is synced by it, rather than left behind for a new number.
    /// `may_allocate`: whether a number may be taken from the database
    /// (not inside the writer's transaction; the spare is used first).
    fn create_segment_file(&mut self, may_allocate: bool) -> std::io::Result<()> {
        if self.file.is_none() {
            if !self.allocated {
                self.segment = self.take_number(may_allocate)?;
                self.allocated = true;
            }
            let file = loop {
                match private_files::create_new_file(&segment_path(&self.dir, self.segment)) {
                    Ok(file) => break file,
                    // Made by a build that took its numbers from the
                    // directory: the next allocation passes it.
                    Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                        self.segment = self.take_number(may_allocate)?;
                    }
                    Err(error) => return Err(error),
                }
            };
            self.file = Some(file);
            self.name_durable = false;
        }
        if !self.name_durable {
            sync_directory(&self.dir)?;
            self.name_durable = true;
        }
        Ok(())
    }

    /// The spare number, or (`may_allocate`) a new one.
    fn take_number(&mut self, may_allocate: bool) -> std::io::Result<i64> {
        match self.spare.take() {
            Some(number) => Ok(number),
            None if may_allocate => self.allocate_number(),
            None => Err(std::io::Error::other(
                "no spare payload segment number inside a write transaction",
            )),
        }
    }

    /// A segment number never handed out before (see `segment_numbers`),
    /// above every segment on disk.
    fn allocate_number(&self) -> std::io::Result<i64> {
        let highest = highest_segment(&self.dir)?;
        self.numbers
            .allocate(highest)
            .map_err(|error| std::io::Error::other(format!("allocating a segment number: {error}")))
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

/// Fixes the modes of the log's directory (0700) and of every segment in
/// it (0600) where they are looser, each with a warning (see
/// `private_files`).
pub(crate) fn make_private(dir: &Path) -> std::io::Result<()> {
    private_files::make_private(dir, private_files::PRIVATE_DIR_MODE)?;
    for (_, entry) in segments(dir)? {
        private_files::make_private(&entry.path(), private_files::PRIVATE_FILE_MODE)?;
    }
    Ok(())
}

/// The numbers of the segments in `dir`.
pub(crate) fn segment_numbers(dir: &Path) -> std::io::Result<Vec<i64>> {
    Ok(segments(dir)?.into_iter().map(|(n, _)| n).collect())
}

/// Deletes segment `segment` of the log in `dir` (retention).
pub(crate) fn delete_segment(dir: &Path, segment: i64) -> std::io::Result<()> {
    std::fs::remove_file(segment_path(dir, segment))
}

fn highest_segment(dir: &Path) -> std::io::Result<i64> {
    Ok(segments(dir)?.iter().map(|(n, _)| *n).max().unwrap_or(0))
}

/// The length of segment `segment`'s file in `dir`.
pub(crate) fn segment_len(dir: &Path, segment: i64) -> std::io::Result<u64> {
    Ok(std::fs::metadata(segment_path(dir, segment))?.len())
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
/// Shared by every reader of one store (`SqliteStore::open_reader`), so
/// one sweep ([`PayloadFiles::close_deleted`]) reaches all their handles.
pub(crate) struct PayloadFiles {
    dir: PathBuf,
    open: Mutex<HashMap<i64, Arc<File>>>,
}

/// Most segment files a reader keeps open.
const OPEN_SEGMENTS: usize = 64;

/// Tests elsewhere in the store: a writer on a log beside a new, migrated
/// database in `root` (numbers come from the database), and the log's
/// directory.
#[cfg(test)]
pub(crate) fn open_for_tests(root: &Path) -> (PathBuf, PayloadLog) {
    let db = root.join("inbox.db");
    let timeout = std::time::Duration::from_secs(1);
    let mut conn = super::open_connection(&db, timeout).expect("open test database");
    super::schema::migrate(&mut conn).expect("migrate test database");
    let numbers = SegmentNumbers::open(&db, timeout).expect("segment numbers");
    let dir = directory_for(&db);
    let log = PayloadLog::open(&dir, numbers).expect("open payload log");
    (dir, log)
}

/// How a read gets its segment's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Open {
    /// The file kept open, if it still has a name; else opened again.
    Kept,
    /// Opened again whatever is kept: for a second try after a body did
    /// not authenticate or match its fingerprint (see `reader`).
    Fresh,
}

impl PayloadFiles {
    pub(crate) fn new(dir: PathBuf) -> PayloadFiles {
        PayloadFiles {
            dir,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// The bytes at `reference`.
    pub(crate) fn read(&self, reference: PayloadRef, how: Open) -> std::io::Result<Bytes> {
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
        let file = self.file(reference.segment, how)?;
        let mut bytes = vec![0; len];
        file.read_exact_at(&mut bytes, offset)?;
        Ok(Bytes::from(bytes))
    }

    /// Closes the cached files of deleted segments, so their space is freed.
    pub(crate) fn forget(&self, segments: &[i64]) {
        if let Ok(mut open) = self.open.lock() {
            for segment in segments {
                open.remove(segment);
            }
        }
    }

    /// Closes every kept file whose segment was deleted, by any process,
    /// so its space is freed even if nothing reads it again; how many.
    /// One `fstat` per kept file.
    pub(crate) fn close_deleted(&self) -> usize {
        let Ok(mut open) = self.open.lock() else {
            return 0;
        };
        let before = open.len();
        open.retain(|_, file| still_named(file));
        before - open.len()
    }

    fn file(&self, segment: i64, how: Open) -> std::io::Result<Arc<File>> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| std::io::Error::other("payload file cache poisoned"))?;
        if let Some(file) = open.get(&segment) {
            if how == Open::Kept && still_named(file) {
                return Ok(Arc::clone(file));
            }
            // Deleted, or not trusted: dropping it closes the file once
            // no read still uses it.
            open.remove(&segment);
        }
        let file = Arc::new(File::open(segment_path(&self.dir, segment))?);
        if open.len() >= OPEN_SEGMENTS {
            open.clear();
        }
        open.insert(segment, Arc::clone(&file));
        Ok(file)
    }
}

/// Whether `file` still has a name: a segment deleted (or replaced under
/// its name) has none, and what it holds is no longer that segment.
fn still_named(file: &File) -> bool {
    file.metadata().is_ok_and(|metadata| metadata.nlink() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Bytes {
        Bytes::copy_from_slice(text.as_bytes())
    }

    /// A database (where segment numbers come from) and its payload log's
    /// directory.
    struct Fixture {
        _root: tempfile::TempDir,
        db: PathBuf,
        dir: PathBuf,
    }

    impl Fixture {
        fn new() -> Fixture {
            let root = tempfile::tempdir().unwrap();
            let db = root.path().join("inbox.db");
            let mut conn =
                super::super::open_connection(&db, std::time::Duration::from_secs(1)).unwrap();
            super::super::schema::migrate(&mut conn).unwrap();
            let dir = directory_for(&db);
            Fixture {
                _root: root,
                db,
                dir,
            }
        }

        /// The payload log's directory.
        fn path(&self) -> &Path {
            &self.dir
        }

        /// A writer on the log, as a process opening the store makes one.
        fn open(&self) -> PayloadLog {
            self.open_with_segment_bytes(SEGMENT_BYTES)
        }

        fn open_with_segment_bytes(&self, segment_bytes: u64) -> PayloadLog {
            let numbers =
                SegmentNumbers::open(&self.db, std::time::Duration::from_secs(1)).unwrap();
            PayloadLog::open_with_segment_bytes(&self.dir, numbers, segment_bytes).unwrap()
        }
    }

    #[test]
    fn flushed_bodies_read_back_at_their_references() {
        let dir = Fixture::new();
        let mut log = dir.open();
        log.prepare_batch(true, Instant::now()).unwrap();
        let a = log.reserve(&body("first"));
        let b = log.reserve(&body("second body"));
        log.flush(Instant::now()).unwrap();
        let c = log.reserve(&body("third"));
        log.flush(Instant::now()).unwrap();
        assert_eq!((a.offset, b.offset, c.offset), (0, 5, 16));
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(a, Open::Kept).unwrap(), body("first"));
        assert_eq!(files.read(b, Open::Kept).unwrap(), body("second body"));
        assert_eq!(files.read(c, Open::Kept).unwrap(), body("third"));
    }

    #[test]
    fn rolled_back_reservations_are_not_written_and_their_space_is_reused() {
        let dir = Fixture::new();
        let mut log = dir.open();
        log.prepare_batch(true, Instant::now()).unwrap();
        let kept = log.reserve(&body("kept"));
        let mark = log.mark();
        log.reserve(&body("duplicate, not written"));
        log.rollback_to(mark);
        let next = log.reserve(&body("next"));
        log.flush(Instant::now()).unwrap();
        assert_eq!(next.offset, 4);
        let written = std::fs::read(segment_path(dir.path(), kept.segment)).unwrap();
        assert_eq!(written, b"keptnext");
    }

    #[test]
    fn a_reopened_log_starts_a_new_segment_and_keeps_the_old_one_readable() {
        let dir = Fixture::new();
        let first = {
            let mut log = dir.open();
            log.prepare_batch(true, Instant::now()).unwrap();
            let reference = log.reserve(&body("before restart"));
            log.flush(Instant::now()).unwrap();
            // Bytes reserved but never flushed (a crash before COMMIT) are
            // simply absent.
            log.reserve(&body("lost"));
            reference
        };
        let mut log = dir.open();
        log.prepare_batch(true, Instant::now()).unwrap();
        let second = log.reserve(&body("after"));
        log.flush(Instant::now()).unwrap();
        assert_eq!(first.segment, 1);
        assert!(
            second.segment > first.segment,
            "a restart starts a new segment: {second:?}"
        );
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(
            files.read(first, Open::Kept).unwrap(),
            body("before restart")
        );
        assert_eq!(files.read(second, Open::Kept).unwrap(), body("after"));
    }

    #[test]
    fn a_full_segment_is_followed_by_a_new_one_at_a_batch_boundary() {
        let dir = Fixture::new();
        let mut log = dir.open_with_segment_bytes(8);
        log.prepare_batch(true, Instant::now()).unwrap();
        let a = log.reserve(&body("0123456789"));
        log.flush(Instant::now()).unwrap();
        log.prepare_batch(true, Instant::now()).unwrap();
        let b = log.reserve(&body("abc"));
        log.flush(Instant::now()).unwrap();
        assert_eq!((a.segment, a.offset), (1, 0));
        assert_eq!((b.segment, b.offset), (2, 0));
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(a, Open::Kept).unwrap(), body("0123456789"));
        assert_eq!(files.read(b, Open::Kept).unwrap(), body("abc"));
    }

    #[test]
    fn two_writers_on_one_directory_never_share_a_segment() {
        let dir = Fixture::new();
        // Both see the same highest segment at open, as two processes
        // started together would.
        let mut first = dir.open();
        let mut second = dir.open();
        first.prepare_batch(true, Instant::now()).unwrap();
        second.prepare_batch(true, Instant::now()).unwrap();
        let a = first.reserve(&body("from the first"));
        let b = second.reserve(&body("from the second"));
        first.flush(Instant::now()).unwrap();
        second.flush(Instant::now()).unwrap();
        assert_ne!(a.segment, b.segment);
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(a, Open::Kept).unwrap(), body("from the first"));
        assert_eq!(files.read(b, Open::Kept).unwrap(), body("from the second"));
    }

    #[test]
    fn a_log_that_writes_no_bodies_creates_no_segment() {
        let dir = Fixture::new();
        let mut log = dir.open();
        log.prepare_batch(false, Instant::now()).unwrap();
        let empty = log.reserve(&Bytes::new());
        log.flush(Instant::now()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(empty, Open::Kept).unwrap(), Bytes::new());
    }

    fn segment_files(dir: &Path) -> Vec<i64> {
        let mut numbers: Vec<i64> = segments(dir).unwrap().iter().map(|(n, _)| *n).collect();
        numbers.sort_unstable();
        numbers
    }

    /// One batch of one body on a full disk: it must fail.
    fn fail_one_batch(log: &mut PayloadLog, text: &str) {
        log.prepare_batch(true, Instant::now()).unwrap();
        log.reserve(&body(text));
        assert!(
            log.flush(Instant::now()).is_err(),
            "a write on a full disk succeeded"
        );
    }

    #[test]
    fn a_new_segment_is_reused_while_its_writes_fail() {
        let dir = Fixture::new();
        let mut log = dir.open();
        log.disk_full = true;
        for attempt in 0..5 {
            fail_one_batch(&mut log, &format!("attempt {attempt} that never lands"));
        }
        assert_eq!(
            segment_files(dir.path()),
            [1],
            "one file for all the failed attempts"
        );

        log.disk_full = false;
        log.prepare_batch(true, Instant::now()).unwrap();
        let landed = log.reserve(&body("landed"));
        log.flush(Instant::now()).unwrap();
        assert_eq!((landed.segment, landed.offset), (1, 0));
        // The failed attempts' bytes were cut away, not left before or after it.
        assert_eq!(
            std::fs::read(segment_path(dir.path(), 1)).unwrap(),
            b"landed"
        );
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(landed, Open::Kept).unwrap(), body("landed"));
    }

    #[test]
    fn a_segment_holding_committed_bodies_is_left_once_then_the_next_is_reused() {
        let dir = Fixture::new();
        let mut log = dir.open();
        log.prepare_batch(true, Instant::now()).unwrap();
        let committed = log.reserve(&body("committed"));
        log.flush(Instant::now()).unwrap();

        log.disk_full = true;
        for attempt in 0..5 {
            fail_one_batch(&mut log, &format!("attempt {attempt}"));
        }
        // Segment 1 is not written after its failed sync; segment 2 takes
        // every later attempt.
        assert_eq!(segment_files(dir.path()), [1, 2]);
        assert_eq!(
            std::fs::read(segment_path(dir.path(), 1)).unwrap(),
            b"committed",
            "the failed batch's tail is cut back, the committed body kept"
        );

        log.disk_full = false;
        log.prepare_batch(true, Instant::now()).unwrap();
        let after = log.reserve(&body("after"));
        log.flush(Instant::now()).unwrap();
        assert_eq!((after.segment, after.offset), (2, 0));
        assert_eq!(segment_files(dir.path()), [1, 2]);
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(
            files.read(committed, Open::Kept).unwrap(),
            body("committed")
        );
        assert_eq!(files.read(after, Open::Kept).unwrap(), body("after"));
    }

    #[test]
    fn a_failure_in_a_reused_segment_after_a_success_leaves_it() {
        let dir = Fixture::new();
        let mut log = dir.open();
        log.disk_full = true;
        fail_one_batch(&mut log, "lost");
        log.disk_full = false;
        log.prepare_batch(true, Instant::now()).unwrap();
        let kept = log.reserve(&body("kept"));
        log.flush(Instant::now()).unwrap();
        // Segment 1 now holds a durable body: the next failure leaves it.
        log.disk_full = true;
        fail_one_batch(&mut log, "lost again");
        log.disk_full = false;
        log.prepare_batch(true, Instant::now()).unwrap();
        let next = log.reserve(&body("next"));
        log.flush(Instant::now()).unwrap();
        assert_eq!((kept.segment, next.segment), (1, 2));
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(kept, Open::Kept).unwrap(), body("kept"));
        assert_eq!(files.read(next, Open::Kept).unwrap(), body("next"));
    }

    #[test]
    fn after_a_failed_write_bodies_are_refused_for_a_pause_until_a_write_succeeds() {
        let dir = Fixture::new();
        let mut log = dir.open();
        let failed_at = Instant::now();
        log.prepare_batch(true, failed_at).unwrap();
        log.disk_full = true;
        log.reserve(&body("refused"));
        log.flush(failed_at).unwrap_err();
        assert!(!log.accepts_bodies(failed_at));
        let later = failed_at + std::time::Duration::from_secs(1);
        assert!(log.accepts_bodies(later));

        log.disk_full = false;
        log.prepare_batch(true, later).unwrap();
        log.reserve(&body("landed"));
        log.flush(later).unwrap();
        assert!(log.accepts_bodies(later), "a success ends the pause");
    }

    #[test]
    fn a_segment_that_cannot_be_created_pauses_bodies_and_keeps_its_number() {
        let dir = Fixture::new();
        let log_dir = dir.path().to_owned();
        let mut log = dir.open();
        std::fs::remove_dir(&log_dir).unwrap();
        let failed_at = Instant::now();
        log.prepare_batch(true, failed_at).unwrap_err();
        assert!(!log.accepts_bodies(failed_at));

        std::fs::create_dir(&log_dir).unwrap();
        let later = failed_at + std::time::Duration::from_secs(1);
        log.prepare_batch(true, later).unwrap();
        let landed = log.reserve(&body("landed"));
        log.flush(later).unwrap();
        assert_eq!(landed.segment, 1);
        assert_eq!(segment_files(&log_dir), [1]);
    }

    #[test]
    fn a_left_segment_is_followed_by_a_ready_one_within_the_same_batch() {
        let dir = Fixture::new();
        let mut log = dir.open();
        let now = Instant::now();
        log.prepare_batch(true, now).unwrap();
        assert!(!log.leave_current_segment(now), "nothing written yet");
        let first = log.reserve(&body("first"));
        assert!(
            !log.leave_current_segment(now),
            "a body of this batch is in it"
        );
        log.flush(now).unwrap();

        // A purge op leaves the segment, then an accept in the same batch
        // reserves a body: it lands in the next segment, already created
        // under the spare number taken before the batch (no database write
        // inside the writer's transaction).
        log.prepare_batch(false, now).unwrap();
        assert!(log.leave_current_segment(now));
        assert_eq!(segment_files(dir.path()), [1, 2]);
        let second = log.reserve(&body("second"));
        log.flush(now).unwrap();
        assert_eq!((first.segment, second.segment), (1, 2));
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(files.read(second, Open::Kept).unwrap(), body("second"));
    }

    #[test]
    fn reading_past_the_written_end_is_an_error_not_zeros() {
        let dir = Fixture::new();
        let mut log = dir.open();
        log.prepare_batch(true, Instant::now()).unwrap();
        let mut reference = log.reserve(&body("short"));
        log.flush(Instant::now()).unwrap();
        reference.len = 100;
        let files = PayloadFiles::new(dir.path().to_owned());
        assert!(files.read(reference, Open::Kept).is_err());
    }

    /// One batch of one body; where it went.
    fn write_one(log: &mut PayloadLog, text: &str) -> PayloadRef {
        log.prepare_batch(true, Instant::now()).unwrap();
        let reference = log.reserve(&body(text));
        log.flush(Instant::now()).unwrap();
        reference
    }

    fn delete_every_segment(dir: &Path) {
        for segment in segment_files(dir) {
            delete_segment(dir, segment).unwrap();
        }
    }

    #[test]
    fn a_number_is_never_used_again_after_its_file_is_deleted() {
        let dir = Fixture::new();
        let mut log = dir.open_with_segment_bytes(8);
        let mut used = vec![
            write_one(&mut log, "0123456789").segment,
            write_one(&mut log, "abc").segment,
        ];
        assert_eq!(used[0], 1);

        // Retention (here or in another process) deletes every segment,
        // the one this writer appends to included: its next batch goes to
        // a new number.
        delete_every_segment(dir.path());
        used.push(write_one(&mut log, "after the purge").segment);

        // Another writer, and this one restarted, with no file on disk at
        // all: the directory no longer knows any number, the database does.
        delete_every_segment(dir.path());
        let mut other = dir.open();
        used.push(write_one(&mut other, "another process").segment);
        drop(log);
        delete_every_segment(dir.path());
        let mut restarted = dir.open();
        used.push(write_one(&mut restarted, "after a restart").segment);

        // Each number once, in order (a spare taken ahead and never used,
        // as by the writer that stopped, leaves a gap: numbers are unique,
        // not dense).
        assert!(
            used.windows(2).all(|pair| pair[0] < pair[1]),
            "each number once, in order: {used:?}"
        );
    }

    #[test]
    fn a_reader_never_reads_a_deleted_segment_it_kept_open() {
        let dir = Fixture::new();
        let mut log = dir.open();
        let reference = write_one(&mut log, "old bytes");
        drop(log);
        let files = PayloadFiles::new(dir.path().to_owned());
        assert_eq!(
            files.read(reference, Open::Kept).unwrap(),
            body("old bytes")
        );

        // Deleted, and a file made under its name (a segment rewritten in
        // place, or numbered by an older build): the new file is read.
        delete_segment(dir.path(), reference.segment).unwrap();
        std::fs::write(segment_path(dir.path(), reference.segment), "new bytes").unwrap();
        assert_eq!(
            files.read(reference, Open::Kept).unwrap(),
            body("new bytes")
        );

        // Deleted for good: an error, not the kept file's bytes.
        delete_segment(dir.path(), reference.segment).unwrap();
        let error = files.read(reference, Open::Kept).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    }

    /// This process's open files under `dir` whose name was deleted.
    fn deleted_but_open(dir: &Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .filter(|target| {
                let target = target.to_string_lossy();
                target.starts_with(&*dir.to_string_lossy()) && target.ends_with(" (deleted)")
            })
            .count()
    }

    #[test]
    fn kept_files_of_deleted_segments_are_closed_by_the_sweep() {
        let dir = Fixture::new();
        let mut log = dir.open_with_segment_bytes(1);
        let first = write_one(&mut log, "first");
        let second = write_one(&mut log, "second");
        drop(log);
        let files = PayloadFiles::new(dir.path().to_owned());
        files.read(first, Open::Kept).unwrap();
        files.read(second, Open::Kept).unwrap();
        assert_eq!(files.close_deleted(), 0, "nothing deleted yet");

        delete_segment(dir.path(), first.segment).unwrap();
        assert_eq!(
            deleted_but_open(dir.path()),
            1,
            "the kept file holds its space"
        );
        assert_eq!(files.close_deleted(), 1);
        assert_eq!(deleted_but_open(dir.path()), 0);
        assert_eq!(files.read(second, Open::Kept).unwrap(), body("second"));
    }

    #[test]
    fn a_writer_closes_its_deleted_segment_at_its_next_batch_even_without_bodies() {
        let dir = Fixture::new();
        let mut log = dir.open();
        write_one(&mut log, "before the purge");
        delete_every_segment(dir.path());
        assert_eq!(deleted_but_open(dir.path()), 1);

        // A lease or a settlement: no body, yet the deleted file is closed.
        log.prepare_batch(false, Instant::now()).unwrap();
        log.flush(Instant::now()).unwrap();
        assert_eq!(deleted_but_open(dir.path()), 0);

        // The next event is written at once, to a new segment.
        let after = write_one(&mut log, "after the purge");
        assert_eq!((after.segment, after.offset), (2, 0));
    }

    #[test]
    fn a_segment_deleted_after_the_batch_began_fails_the_write_then_is_left() {
        let dir = Fixture::new();
        let mut log = dir.open();
        write_one(&mut log, "before");
        log.prepare_batch(true, Instant::now()).unwrap();
        delete_every_segment(dir.path());
        log.reserve(&body("refused"));
        log.flush(Instant::now()).unwrap_err();
        let later = Instant::now() + std::time::Duration::from_secs(1);
        log.prepare_batch(true, later).unwrap();
        let next = log.reserve(&body("next"));
        log.flush(later).unwrap();
        assert_eq!((next.segment, next.offset), (2, 0));
    }
}
