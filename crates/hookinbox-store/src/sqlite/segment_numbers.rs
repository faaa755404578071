//! Payload segment numbers, handed out by the database so that no number
//! is ever used twice (docs/architecture.md §6).
//!
//! Why: a segment is named only by its number, in the rows that point
//! into it and in the readers that keep its file open. Numbers used to be
//! "the highest file on disk, plus one", so once retention deleted the
//! highest segments, a writer (after a restart, or after its own segment
//! was deleted under it) made a new file under a number that had been
//! used, and a reader still holding the deleted file under that number
//! read the new rows' bodies from the old bytes (issue #18).
//!
//! The next number is one row (`payload_segment_next`, schema 12). A
//! writer takes a number in a transaction of its own, committed before it
//! creates the file, so a crash in between wastes a number and never
//! hands it out again; every process sharing the database takes from the
//! same row. The files on disk are a floor: segments made by a build that
//! numbered from the directory are never taken again either.
//!
//! It has a connection of its own, not the writer's: the number must be
//! committed before the batch that writes into the segment begins, and
//! the writer's connection is not in a transaction only between batches.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

/// Where a writer takes its segment numbers from.
pub(crate) struct SegmentNumbers {
    conn: Connection,
}

impl SegmentNumbers {
    /// Takes numbers from the database at `db_path` (migrated to schema
    /// 11 or later), waiting up to `busy_timeout` for another process's
    /// write lock.
    pub(crate) fn open(
        db_path: &Path,
        busy_timeout: Duration,
    ) -> Result<SegmentNumbers, rusqlite::Error> {
        Ok(SegmentNumbers {
            conn: super::open_connection(db_path, busy_timeout)?,
        })
    }

    /// A number no segment of this database had before, and above
    /// `highest_on_disk`; committed (fsynced) before it is returned.
    pub(crate) fn allocate(&self, highest_on_disk: i64) -> Result<i64, rusqlite::Error> {
        self.conn
            .prepare_cached(
                "UPDATE payload_segment_next SET next = max(next, ?1 + 1) + 1 WHERE id = 1
                 RETURNING next - 1",
            )?
            .query_row([highest_on_disk], |row| row.get(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("inbox.db");
        let mut conn = super::super::open_connection(&path, Duration::from_secs(1)).unwrap();
        super::super::schema::migrate(&mut conn).unwrap();
        path
    }

    #[test]
    fn every_holder_of_the_database_gets_numbers_no_one_had() {
        let dir = tempfile::tempdir().unwrap();
        let path = database(dir.path());
        let first = SegmentNumbers::open(&path, Duration::from_secs(1)).unwrap();
        let second = SegmentNumbers::open(&path, Duration::from_secs(1)).unwrap();
        let mut taken = vec![
            first.allocate(0).unwrap(),
            second.allocate(0).unwrap(),
            first.allocate(0).unwrap(),
        ];
        assert_eq!(taken, [1, 2, 3]);
        // Reopened (a restart) with nothing on disk: still no number again.
        drop((first, second));
        let reopened = SegmentNumbers::open(&path, Duration::from_secs(1)).unwrap();
        taken.push(reopened.allocate(0).unwrap());
        assert_eq!(taken[3], 4);
    }

    #[test]
    fn numbers_on_disk_are_never_taken() {
        let dir = tempfile::tempdir().unwrap();
        let numbers = SegmentNumbers::open(&database(dir.path()), Duration::from_secs(1)).unwrap();
        assert_eq!(numbers.allocate(41).unwrap(), 42);
        assert_eq!(
            numbers.allocate(0).unwrap(),
            43,
            "the floor, once passed, stays passed"
        );
    }

    #[test]
    fn a_database_from_before_starts_above_every_number_its_rows_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inbox.db");
        let mut conn = super::super::open_connection(&path, Duration::from_secs(1)).unwrap();
        conn.execute_batch(
            "CREATE TABLE inbox (id TEXT PRIMARY KEY, endpoint_id TEXT, payload_segment INTEGER);
             INSERT INTO inbox VALUES ('a', 'e', 7), ('b', 'e', NULL), ('c', 'e', 3);
             PRAGMA user_version = 10;",
        )
        .unwrap();
        super::super::schema::migrate(&mut conn).unwrap();
        let numbers = SegmentNumbers::open(&path, Duration::from_secs(1)).unwrap();
        assert_eq!(numbers.allocate(0).unwrap(), 8);
    }
}
