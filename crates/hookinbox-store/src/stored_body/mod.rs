//! A body as it is stored, on either backend: compressed when that makes
//! it smaller (`compression`), then sealed when the store has keys
//! (`sealed`), and what its row records to read it back — the key id
//! (`payload_key_id`), the format (`payload_format`) and the body's own
//! length (`payload_raw_len`). See docs/architecture.md §6.
//!
//! The format is bound into the sealed record's associated data (a zstd
//! frame is sealed as [`RecordKind::ZstdPayload`]), so a row whose format
//! was changed fails to open exactly like a record with a changed byte.
//! Rows written before compression have no format (`NULL`: as received)
//! and no length, and read as they always did. The fingerprint is over the
//! body as received, so it is checked after the body is rebuilt.

pub(crate) mod compression;

use bytes::Bytes;

use crate::sealed::{self, RecordKind, SealBuffer};
use crate::{EncryptionKeys, StoreError};

/// How a stored record encodes the body (`payload_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFormat {
    /// The body's bytes as received (`0`, or `NULL` in rows from before).
    AsReceived,
    /// One zstd frame of the body.
    Zstd,
}

impl BodyFormat {
    /// The `payload_format` column.
    pub(crate) fn column(self) -> i16 {
        match self {
            BodyFormat::AsReceived => 0,
            BodyFormat::Zstd => 1,
        }
    }

    /// From the `payload_format` column of row `inbox_id`.
    pub(crate) fn from_column(column: Option<i64>, inbox_id: &str) -> Result<Self, StoreError> {
        match column {
            None | Some(0) => Ok(BodyFormat::AsReceived),
            Some(1) => Ok(BodyFormat::Zstd),
            Some(other) => Err(StoreError::Corrupt(format!(
                "the payload of {inbox_id} has format {other}, which this build does not know"
            ))),
        }
    }
}

/// A body made ready to be written.
#[derive(Debug, Clone)]
pub(crate) struct StoredBody {
    /// The bytes written (payload log record, `inbox_payload.payload`).
    pub(crate) bytes: Bytes,
    /// The key that sealed them; `None`: plain.
    pub(crate) key_id: Option<String>,
    pub(crate) format: BodyFormat,
    /// The length of the body as received.
    pub(crate) raw_len: usize,
}

impl StoredBody {
    /// `body` of row `inbox_id` as it is to be written: compressed if that
    /// is smaller, then sealed under the active key of `keys` if any.
    pub(crate) fn new(
        keys: Option<&EncryptionKeys>,
        inbox_id: &str,
        body: &Bytes,
    ) -> Result<StoredBody, StoreError> {
        let Some(keys) = keys else {
            let (format, bytes) = match compression::compress_if_smaller(body) {
                Some(frame) => (BodyFormat::Zstd, Bytes::from(frame)),
                None => (BodyFormat::AsReceived, body.clone()),
            };
            return Ok(StoredBody {
                bytes,
                key_id: None,
                format,
                raw_len: body.len(),
            });
        };
        // Compressed (or copied) once, into the buffer it is sealed in.
        let mut buffer = SealBuffer::with_capacity(body.len());
        let mut plaintext = buffer.plaintext_mut();
        let compressed = plaintext.fill_with(compression::room_for(body.len()), |frame| {
            compression::compress_into(body, frame)
        });
        let format = match compressed {
            Some(_) => BodyFormat::Zstd,
            None => {
                plaintext.clear();
                plaintext.extend_from_slice(body);
                BodyFormat::AsReceived
            }
        };
        let key_id = keys.active_id();
        buffer.seal(keys, key_id, record_kind(format), inbox_id)?;
        Ok(StoredBody {
            bytes: Bytes::from(buffer.into_sealed()),
            key_id: Some(key_id.to_owned()),
            format,
            raw_len: body.len(),
        })
    }

    /// The `payload_raw_len` column.
    pub(crate) fn raw_len_column(&self) -> i64 {
        i64::try_from(self.raw_len).unwrap_or(i64::MAX)
    }
}

/// What a row records about its stored body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BodyRecord {
    /// `payload_key_id`: the key that sealed it; `None`: plain.
    pub(crate) key_id: Option<String>,
    /// `payload_format`, as stored.
    pub(crate) format: Option<i64>,
    /// `payload_raw_len`: `None` in rows from before compression.
    pub(crate) raw_len: Option<i64>,
}

impl BodyRecord {
    /// The body of row `inbox_id` from its stored bytes: opened with its
    /// key, then decompressed, never past its recorded length.
    pub(crate) fn body(
        &self,
        keys: Option<&EncryptionKeys>,
        inbox_id: &str,
        stored: Bytes,
    ) -> Result<Bytes, StoreError> {
        let format = BodyFormat::from_column(self.format, inbox_id)?;
        let encoded = match self.key_id.as_deref() {
            None => stored,
            Some(key_id) => Bytes::from(sealed::open(
                keys,
                key_id,
                record_kind(format),
                inbox_id,
                &stored,
            )?),
        };
        match format {
            BodyFormat::AsReceived => Ok(encoded),
            BodyFormat::Zstd => {
                let corrupt = |why: String| {
                    StoreError::Corrupt(format!("the compressed payload of {inbox_id}: {why}"))
                };
                let raw_len = self
                    .raw_len
                    .and_then(|len| usize::try_from(len).ok())
                    .ok_or_else(|| corrupt("its row records no length".to_owned()))?;
                compression::decompress(&encoded, raw_len)
                    .map(Bytes::from)
                    .map_err(|error| corrupt(error.to_string()))
            }
        }
    }

    /// The length of the body as received, from the length of its stored
    /// record, without reading it.
    pub(crate) fn body_len(&self, stored_len: usize) -> usize {
        if let Some(raw_len) = self.raw_len.and_then(|len| usize::try_from(len).ok()) {
            return raw_len;
        }
        match self.key_id {
            Some(_) => sealed::plaintext_len(stored_len),
            None => stored_len,
        }
    }
}

/// The record kind a body of `format` is sealed as.
fn record_kind(format: BodyFormat) -> RecordKind {
    match format {
        BodyFormat::AsReceived => RecordKind::Payload,
        BodyFormat::Zstd => RecordKind::ZstdPayload,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> EncryptionKeys {
        EncryptionKeys::new("k1", secrecy::SecretBox::new(Box::new([7; 32]))).unwrap()
    }

    fn json() -> Bytes {
        Bytes::from(r#"{"object":"invoice","currency":"eur","paid":true},"#.repeat(100))
    }

    fn record_of(stored: &StoredBody) -> BodyRecord {
        BodyRecord {
            key_id: stored.key_id.clone(),
            format: Some(i64::from(stored.format.column())),
            raw_len: Some(stored.raw_len_column()),
        }
    }

    #[test]
    fn a_body_is_compressed_then_sealed_and_read_back_exactly() {
        let keys = ring();
        for keys in [None, Some(&keys)] {
            let body = json();
            let stored = StoredBody::new(keys, "row", &body).unwrap();
            assert_eq!(stored.format, BodyFormat::Zstd);
            assert!(stored.bytes.len() < body.len() / 4);
            let record = record_of(&stored);
            assert_eq!(record.body_len(stored.bytes.len()), body.len());
            assert_eq!(
                record.body(keys, "row", stored.bytes.clone()).unwrap(),
                body
            );
        }
    }

    #[test]
    fn a_body_sealed_in_place_is_nonce_ciphertext_tag_as_before() {
        let keys = ring();
        let body = json();
        let stored = StoredBody::new(Some(&keys), "row", &body).unwrap();
        let frame = sealed::open(
            Some(&keys),
            "k1",
            RecordKind::ZstdPayload,
            "row",
            &stored.bytes,
        )
        .unwrap();
        assert_eq!(stored.bytes.len(), frame.len() + sealed::OVERHEAD);
        assert_eq!(compression::decompress(&frame, body.len()).unwrap(), body);
        // Bytes of a 64-bit LCG do not compress; short bodies are not tried.
        let mut state = 7_u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                (state >> 56) as u8
            })
            .collect();
        for body in [Bytes::from_static(b"{\"id\":1}"), Bytes::from(noise)] {
            let stored = StoredBody::new(Some(&keys), "row", &body).unwrap();
            assert_eq!(stored.format, BodyFormat::AsReceived);
            assert_eq!(stored.bytes.len(), body.len() + sealed::OVERHEAD);
            let opened = sealed::open(Some(&keys), "k1", RecordKind::Payload, "row", &stored.bytes);
            assert_eq!(opened.unwrap(), body);
            assert_eq!(
                record_of(&stored)
                    .body(Some(&keys), "row", stored.bytes)
                    .unwrap(),
                body
            );
        }
    }

    #[test]
    fn a_record_from_before_compression_reads_as_it_always_did() {
        // What accepts stored before: the body sealed as `Payload`, and no
        // format or length in the row.
        let keys = ring();
        let body = json();
        let old = sealed::seal(&keys, RecordKind::Payload, "row", &body).unwrap();
        let record = BodyRecord {
            key_id: Some("k1".to_owned()),
            format: None,
            raw_len: None,
        };
        assert_eq!(record.body_len(old.bytes.len()), body.len());
        assert_eq!(
            record
                .body(Some(&keys), "row", Bytes::from(old.bytes))
                .unwrap(),
            body
        );
        let plain = BodyRecord {
            key_id: None,
            format: None,
            raw_len: None,
        };
        assert_eq!(plain.body(None, "row", body.clone()).unwrap(), body);
    }

    #[test]
    fn a_sealed_frame_does_not_open_under_another_format() {
        let keys = ring();
        let stored = StoredBody::new(Some(&keys), "row", &json()).unwrap();
        let mut record = record_of(&stored);
        record.format = None;
        let error = record
            .body(Some(&keys), "row", stored.bytes.clone())
            .unwrap_err();
        assert!(
            matches!(&error, StoreError::Corrupt(message) if message.contains("does not authenticate")),
            "{error:?}"
        );
        record.format = Some(9);
        assert!(matches!(
            record.body(Some(&keys), "row", stored.bytes),
            Err(StoreError::Corrupt(_))
        ));
    }
}
