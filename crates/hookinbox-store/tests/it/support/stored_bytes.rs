//! What a backend stores, read and changed behind the store's back: the
//! sealed body of a row as it is on disk (SQLite's payload log) or in the
//! `bytea` (PostgreSQL), its audit headers column, its key id, its format
//! and length (`payload_format`, `payload_raw_len`) — for tests of
//! encryption and compression at rest that look at the bytes, flip one, or
//! move a sealed body to another row.

use std::path::Path;

use super::{Backend, Place};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where a SQLite row's body is in the payload log.
fn sqlite_location(db: &Path, inbox_id: &str) -> (i64, i64, i64) {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT payload_segment, payload_offset, payload_len FROM inbox WHERE id = ?1",
            [inbox_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap()
}

fn segment_path(db: &Path, segment: i64) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("{}-payloads/{segment:08}.seg", db.display()))
}

impl Backend {
    /// The row's body exactly as stored (sealed, when there are keys).
    pub async fn stored_payload(&self, inbox_id: &str) -> Vec<u8> {
        match self.place() {
            Place::Sqlite(_) => {
                let db = self.place().sqlite_path().unwrap();
                let (segment, offset, len) = sqlite_location(&db, inbox_id);
                let bytes = std::fs::read(segment_path(&db, segment)).unwrap();
                bytes[offset as usize..(offset + len) as usize].to_vec()
            }
            Place::Postgres(schema) => {
                let rows = schema
                    .query(&format!(
                        "SELECT payload FROM inbox_payload WHERE inbox_id = '{inbox_id}'"
                    ))
                    .await;
                rows[0].get(0)
            }
        }
    }

    /// The row's `audit_headers` column as stored.
    pub async fn stored_audit_headers(&self, inbox_id: &str) -> String {
        self.text_column("audit_headers", inbox_id).await.unwrap()
    }

    /// The key id the row names (`payload_key_id`); `None`: plain.
    pub async fn stored_key_id(&self, inbox_id: &str) -> Option<String> {
        self.text_column("payload_key_id", inbox_id).await
    }

    async fn text_column(&self, column: &str, inbox_id: &str) -> Option<String> {
        match self.place() {
            Place::Sqlite(_) => rusqlite::Connection::open(self.place().sqlite_path().unwrap())
                .unwrap()
                .query_row(
                    &format!("SELECT {column} FROM inbox WHERE id = ?1"),
                    [inbox_id],
                    |row| row.get(0),
                )
                .unwrap(),
            Place::Postgres(schema) => schema
                .query(&format!(
                    "SELECT {column} FROM inbox WHERE id = '{inbox_id}'"
                ))
                .await[0]
                .get(0),
        }
    }

    /// What the row records about its stored body: `payload_format` and
    /// `payload_raw_len` (on `inbox` in SQLite, on `inbox_payload` in
    /// PostgreSQL, beside the bytes); `None` where the column is NULL.
    pub async fn stored_body_columns(&self, inbox_id: &str) -> (Option<i64>, Option<i64>) {
        match self.place() {
            Place::Sqlite(_) => rusqlite::Connection::open(self.place().sqlite_path().unwrap())
                .unwrap()
                .query_row(
                    "SELECT payload_format, payload_raw_len FROM inbox WHERE id = ?1",
                    [inbox_id],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .unwrap(),
            Place::Postgres(schema) => {
                let rows = schema
                    .query(&format!(
                        "SELECT payload_format, payload_raw_len FROM inbox_payload
                         WHERE inbox_id = '{inbox_id}'"
                    ))
                    .await;
                match rows.first() {
                    Some(row) => (row.get::<_, Option<i16>>(0).map(i64::from), row.get(1)),
                    None => (None, None),
                }
            }
        }
    }

    /// Overwrites the row's `payload_format` and `payload_raw_len`, as
    /// someone with access to the database could (both `None`: as a row
    /// written before compression has them).
    pub async fn set_stored_body_columns(
        &self,
        inbox_id: &str,
        format: Option<i64>,
        raw_len: Option<i64>,
    ) {
        let sql = |value: Option<i64>| value.map_or("NULL".to_owned(), |v| v.to_string());
        let (format, raw_len) = (sql(format), sql(raw_len));
        match self.place() {
            Place::Sqlite(_) => {
                rusqlite::Connection::open(self.place().sqlite_path().unwrap())
                    .unwrap()
                    .execute(
                        &format!(
                            "UPDATE inbox SET payload_format = {format}, payload_raw_len = {raw_len}
                             WHERE id = ?1"
                        ),
                        [inbox_id],
                    )
                    .unwrap();
            }
            Place::Postgres(schema) => {
                schema
                    .execute(&format!(
                        "UPDATE inbox_payload SET payload_format = {format}, payload_raw_len = {raw_len}
                         WHERE inbox_id = '{inbox_id}'"
                    ))
                    .await;
            }
        }
    }

    /// Overwrites the row's `audit_headers` column, as someone with access
    /// to the database could.
    pub async fn set_stored_audit_headers(&self, inbox_id: &str, column: &str) {
        match self.place() {
            Place::Sqlite(_) => {
                rusqlite::Connection::open(self.place().sqlite_path().unwrap())
                    .unwrap()
                    .execute(
                        "UPDATE inbox SET audit_headers = ?2 WHERE id = ?1",
                        [inbox_id, column],
                    )
                    .unwrap();
            }
            Place::Postgres(schema) => {
                // Base64 and JSON hold no quote that needs escaping here.
                assert!(!column.contains('\''));
                schema
                    .execute(&format!(
                        "UPDATE inbox SET audit_headers = '{column}' WHERE id = '{inbox_id}'"
                    ))
                    .await;
            }
        }
    }

    /// Every byte the backend holds for its rows: SQLite's database file,
    /// its WAL and every payload segment; PostgreSQL's bodies and audit
    /// headers. For looking for plaintext that should not be there.
    pub async fn everything_stored(&self) -> Vec<u8> {
        match self.place() {
            Place::Sqlite(dir) => {
                let mut all = Vec::new();
                let mut paths = vec![dir.path().join("inbox.db"), dir.path().join("inbox.db-wal")];
                for entry in std::fs::read_dir(dir.path().join("inbox.db-payloads")).unwrap() {
                    paths.push(entry.unwrap().path());
                }
                for path in paths {
                    if let Ok(bytes) = std::fs::read(&path) {
                        all.extend_from_slice(&bytes);
                    }
                }
                all
            }
            Place::Postgres(schema) => {
                let mut all = Vec::new();
                for row in schema.query("SELECT payload FROM inbox_payload").await {
                    all.extend_from_slice(row.get::<_, &[u8]>(0));
                }
                for row in schema.query("SELECT audit_headers FROM inbox").await {
                    all.extend_from_slice(row.get::<_, &str>(0).as_bytes());
                }
                all
            }
        }
    }

    /// Flips one bit of byte `index` of the row's stored body.
    pub async fn flip_stored_payload_byte(&self, inbox_id: &str, index: usize) {
        match self.place() {
            Place::Sqlite(_) => {
                let db = self.place().sqlite_path().unwrap();
                let (segment, offset, _) = sqlite_location(&db, inbox_id);
                let path = segment_path(&db, segment);
                let mut bytes = std::fs::read(&path).unwrap();
                bytes[offset as usize + index] ^= 1;
                std::fs::write(&path, bytes).unwrap();
            }
            Place::Postgres(schema) => {
                let mut bytes = self.stored_payload(inbox_id).await;
                bytes[index] ^= 1;
                schema
                    .execute(&format!(
                        "UPDATE inbox_payload SET payload = decode('{}', 'hex')
                         WHERE inbox_id = '{inbox_id}'",
                        hex(&bytes)
                    ))
                    .await;
            }
        }
    }

    /// Makes row `to` hold exactly what row `from` stores for its body
    /// (the sealed bytes, or their reference in the payload log, and the
    /// key id), as someone with access to the database could.
    pub async fn copy_stored_payload(&self, from: &str, to: &str) {
        match self.place() {
            Place::Sqlite(_) => {
                rusqlite::Connection::open(self.place().sqlite_path().unwrap())
                    .unwrap()
                    .execute(
                        "UPDATE inbox SET (payload_segment, payload_offset, payload_len, payload_key_id) =
                             (SELECT payload_segment, payload_offset, payload_len, payload_key_id
                              FROM inbox WHERE id = ?1)
                         WHERE id = ?2",
                        [from, to],
                    )
                    .unwrap();
            }
            Place::Postgres(schema) => {
                schema
                    .execute(&format!(
                        "UPDATE inbox_payload SET payload =
                             (SELECT payload FROM inbox_payload WHERE inbox_id = '{from}')
                         WHERE inbox_id = '{to}';
                         UPDATE inbox SET payload_key_id =
                             (SELECT payload_key_id FROM inbox WHERE id = '{from}')
                         WHERE id = '{to}'"
                    ))
                    .await;
            }
        }
    }
}
