//! Sealing one record at rest: XChaCha20-Poly1305 (`xchacha20_poly1305`)
//! under a key of the ring ([`EncryptionKeys`]), a fresh random 24-byte
//! nonce per record (from the operating system), stored as
//! `nonce ‖ ciphertext ‖ tag`, 40 bytes more than the plaintext.
//!
//! The associated data is the record's identity: what the record is and
//! the inbox id of its row (`b"payload\0" + inbox_id`, `b"audit\0" +
//! inbox_id`), or for a key's check value the key id (`b"key check\0" +
//! key_id`, see `key_check`). A sealed record copied to another row, or a sealed body
//! swapped with the row's sealed headers, fails to open, as do a wrong key
//! and any changed byte. Every such failure is [`StoreError::Corrupt`]
//! naming the inbox id and the key id: never the key, never the bytes.
//!
//! The key id itself is not inside the sealed bytes: each row keeps it
//! beside them (`inbox.payload_key_id`), for its body and its audit headers
//! alike. The audit headers column is text, so there the sealed bytes are
//! stored in standard base64.

use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};

use crate::xchacha20_poly1305::{self, NONCE_BYTES, TAG_BYTES};
use crate::{EncryptionKeys, StoreError};

/// How much longer a sealed record is than its plaintext.
pub(crate) const OVERHEAD: usize = NONCE_BYTES + TAG_BYTES;

/// What a sealed record is: part of its associated data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    /// The raw request body, as received.
    Payload,
    /// The raw request body, compressed (one zstd frame, `stored_body`):
    /// a label of its own, so a record cannot be read in the other format.
    ZstdPayload,
    /// The request headers kept for audit (JSON).
    AuditHeaders,
    /// A key's check value: a fixed label sealed under that key, whose
    /// identity is the key id (`key_check`).
    KeyCheck,
    /// A secret a provider handed over (`learned_secrets`), whose identity
    /// is its endpoint and fingerprint.
    LearnedSecret,
}

impl RecordKind {
    fn label(self) -> &'static [u8] {
        match self {
            RecordKind::Payload => b"payload\0",
            RecordKind::ZstdPayload => b"payload zstd\0",
            RecordKind::AuditHeaders => b"audit\0",
            RecordKind::KeyCheck => b"key check\0",
            RecordKind::LearnedSecret => b"learned secret\0",
        }
    }

    fn name(self) -> &'static str {
        match self {
            RecordKind::Payload | RecordKind::ZstdPayload => "payload",
            RecordKind::AuditHeaders => "audit headers",
            RecordKind::KeyCheck => "check value",
            RecordKind::LearnedSecret => "learned secret",
        }
    }

    fn associated_data(self, inbox_id: &str) -> Vec<u8> {
        [self.label(), inbox_id.as_bytes()].concat()
    }
}

/// A record sealed under the active key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sealed {
    pub(crate) key_id: String,
    pub(crate) bytes: Vec<u8>,
}

/// Seals `plaintext` as the `kind` record of row `inbox_id` under the
/// active key.
pub(crate) fn seal(
    keys: &EncryptionKeys,
    kind: RecordKind,
    inbox_id: &str,
    plaintext: &[u8],
) -> Result<Sealed, StoreError> {
    seal_under(keys, keys.active_id(), kind, inbox_id, plaintext)
}

/// Seals `plaintext` as the `kind` record of `record_id` under the key
/// `key_id` of the ring.
pub(crate) fn seal_under(
    keys: &EncryptionKeys,
    key_id: &str,
    kind: RecordKind,
    record_id: &str,
    plaintext: &[u8],
) -> Result<Sealed, StoreError> {
    let mut bytes = SealBuffer::with_capacity(plaintext.len());
    bytes.plaintext_mut().extend_from_slice(plaintext);
    bytes.seal(keys, key_id, kind, record_id)?;
    Ok(Sealed {
        key_id: key_id.to_owned(),
        bytes: bytes.into_sealed(),
    })
}

/// A record sealed where it lies: one buffer that holds room for the nonce,
/// then the plaintext, and becomes `nonce ‖ ciphertext ‖ tag` in place. The
/// plaintext is written into it once (a body compresses straight into it)
/// and never copied again on its way to the disk (bench/RESULTS.md, 0f).
#[derive(Debug)]
pub(crate) struct SealBuffer {
    /// The nonce's room, then the plaintext; after [`SealBuffer::seal`],
    /// the sealed record.
    bytes: Vec<u8>,
}

impl SealBuffer {
    /// An empty plaintext, with room for `plaintext_len` bytes of it and the
    /// record's overhead.
    pub(crate) fn with_capacity(plaintext_len: usize) -> SealBuffer {
        let mut bytes = Vec::with_capacity(OVERHEAD + plaintext_len);
        bytes.resize(NONCE_BYTES, 0);
        SealBuffer { bytes }
    }

    /// The plaintext so far, to be written by the caller. Keep the first
    /// bytes: they are the nonce's.
    pub(crate) fn plaintext_mut(&mut self) -> PlaintextMut<'_> {
        PlaintextMut(&mut self.bytes)
    }

    /// Seals the plaintext in place as the `kind` record of `record_id`
    /// under the key `key_id`, with a fresh nonce.
    pub(crate) fn seal(
        &mut self,
        keys: &EncryptionKeys,
        key_id: &str,
        kind: RecordKind,
        record_id: &str,
    ) -> Result<(), StoreError> {
        let key = keys.key(key_id).ok_or_else(|| {
            StoreError::unavailable(format!("the encryption key {key_id} is not in the ring"))
        })?;
        let mut nonce = [0u8; NONCE_BYTES];
        SystemRandom::new().fill(&mut nonce).map_err(|_| {
            StoreError::unavailable("no random nonce from the operating system".to_owned())
        })?;
        let (nonce_room, plaintext) = self.bytes.split_at_mut(NONCE_BYTES);
        nonce_room.copy_from_slice(&nonce);
        let aad = kind.associated_data(record_id);
        let tag =
            xchacha20_poly1305::seal_in_place(key, &nonce, &aad, plaintext).map_err(|error| {
                StoreError::unavailable(format!(
                    "cannot seal the {} of {record_id} under key {key_id}: {error}",
                    kind.name()
                ))
            })?;
        self.bytes.extend_from_slice(&tag);
        Ok(())
    }

    /// The sealed record (after [`SealBuffer::seal`]).
    pub(crate) fn into_sealed(self) -> Vec<u8> {
        self.bytes
    }
}

/// The plaintext part of a [`SealBuffer`]: what follows the nonce's room.
pub(crate) struct PlaintextMut<'a>(&'a mut Vec<u8>);

impl PlaintextMut<'_> {
    pub(crate) fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    /// Lets `write` fill up to `room` bytes of plaintext (zeroed first) and
    /// keeps the `n` it says it wrote; `None` from `write` leaves the
    /// plaintext empty.
    pub(crate) fn fill_with(
        &mut self,
        room: usize,
        write: impl FnOnce(&mut [u8]) -> Option<usize>,
    ) -> Option<usize> {
        self.0.truncate(NONCE_BYTES);
        self.0.resize(NONCE_BYTES + room, 0);
        let written = write(&mut self.0[NONCE_BYTES..]).filter(|&n| n <= room);
        self.0.truncate(NONCE_BYTES + written.unwrap_or(0));
        written
    }

    pub(crate) fn clear(&mut self) {
        self.0.truncate(NONCE_BYTES);
    }
}

/// Opens the `kind` record of row `inbox_id`, sealed under `key_id`.
/// `keys` is `None` when the store was opened without a ring.
pub(crate) fn open(
    keys: Option<&EncryptionKeys>,
    key_id: &str,
    kind: RecordKind,
    inbox_id: &str,
    sealed: &[u8],
) -> Result<Vec<u8>, StoreError> {
    let corrupt = |why: &str| {
        StoreError::Corrupt(format!(
            "the {} of {inbox_id}, sealed under key {key_id}: {why}",
            kind.name()
        ))
    };
    let keys = keys.ok_or_else(|| corrupt("no encryption keys are configured"))?;
    let key = keys
        .key(key_id)
        .ok_or_else(|| corrupt("that key is not in the key ring"))?;
    if sealed.len() < OVERHEAD {
        return Err(corrupt("too short to be a sealed record"));
    }
    let (nonce, ciphertext_and_tag) = sealed.split_at(NONCE_BYTES);
    let nonce: &[u8; NONCE_BYTES] = nonce
        .try_into()
        .map_err(|_| corrupt("too short to be a sealed record"))?;
    let mut plaintext = ciphertext_and_tag.to_vec();
    let opened = xchacha20_poly1305::open_in_place(
        key,
        nonce,
        &kind.associated_data(inbox_id),
        &mut plaintext,
    )
    .map_err(|_| {
        corrupt(
            "it does not authenticate (a wrong key, or bytes changed or moved from another row)",
        )
    })?
    .len();
    plaintext.truncate(opened);
    Ok(plaintext)
}

/// The length of the plaintext of a sealed record `sealed_len` bytes long.
pub(crate) fn plaintext_len(sealed_len: usize) -> usize {
    sealed_len.saturating_sub(OVERHEAD)
}

/// The audit headers column: the headers as JSON, sealed and in base64
/// when `keys` are given.
pub(crate) fn seal_audit_headers(
    keys: Option<&EncryptionKeys>,
    inbox_id: &str,
    json: &str,
) -> Result<String, StoreError> {
    match keys {
        None => Ok(json.to_owned()),
        Some(keys) => {
            let sealed = seal(keys, RecordKind::AuditHeaders, inbox_id, json.as_bytes())?;
            Ok(base64::engine::general_purpose::STANDARD.encode(sealed.bytes))
        }
    }
}

/// The audit headers JSON of row `inbox_id` from their column: the column
/// itself when `key_id` is `None`, else opened from base64 of the sealed
/// JSON.
pub(crate) fn open_audit_json(
    keys: Option<&EncryptionKeys>,
    key_id: Option<&str>,
    inbox_id: &str,
    column: &str,
) -> Result<String, StoreError> {
    let Some(key_id) = key_id else {
        return Ok(column.to_owned());
    };
    let corrupt = |why: &str| {
        StoreError::Corrupt(format!(
            "the audit headers of {inbox_id}, sealed under key {key_id}: {why}"
        ))
    };
    let sealed = base64::engine::general_purpose::STANDARD
        .decode(column)
        .map_err(|_| corrupt("not base64"))?;
    let json = open(keys, key_id, RecordKind::AuditHeaders, inbox_id, &sealed)?;
    String::from_utf8(json).map_err(|_| corrupt("not UTF-8"))
}

/// The audit headers of row `inbox_id` from their column (see
/// [`open_audit_json`]), as (name, value) pairs.
pub(crate) fn open_audit_headers(
    keys: Option<&EncryptionKeys>,
    key_id: Option<&str>,
    inbox_id: &str,
    column: &str,
) -> Result<Vec<(String, String)>, StoreError> {
    let json = open_audit_json(keys, key_id, inbox_id, column)?;
    serde_json::from_str(&json).map_err(|_| {
        StoreError::Corrupt(format!(
            "the audit headers of {inbox_id} are not a JSON list of [name, value] pairs"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> EncryptionKeys {
        EncryptionKeys::new("k1", secrecy::SecretBox::new(Box::new([7; 32]))).unwrap()
    }

    fn is_corrupt_naming(error: StoreError, inbox_id: &str, key_id: &str) -> bool {
        match error {
            StoreError::Corrupt(message) => {
                message.contains(inbox_id) && message.contains(&format!("key {key_id}"))
            }
            _ => false,
        }
    }

    #[test]
    fn a_sealed_record_opens_under_its_key_and_identity_only() {
        let keys = ring();
        let sealed = seal(&keys, RecordKind::Payload, "row-a", b"{\"secret\":1}").unwrap();
        assert_eq!(sealed.key_id, "k1");
        assert_eq!(sealed.bytes.len(), 12 + OVERHEAD);
        assert_eq!(plaintext_len(sealed.bytes.len()), 12);
        assert_eq!(
            open(
                Some(&keys),
                "k1",
                RecordKind::Payload,
                "row-a",
                &sealed.bytes
            )
            .unwrap(),
            b"{\"secret\":1}"
        );
        // Another row, another kind, another key, no key, a changed byte.
        let moved = open(
            Some(&keys),
            "k1",
            RecordKind::Payload,
            "row-b",
            &sealed.bytes,
        );
        assert!(is_corrupt_naming(moved.unwrap_err(), "row-b", "k1"));
        let swapped = open(
            Some(&keys),
            "k1",
            RecordKind::AuditHeaders,
            "row-a",
            &sealed.bytes,
        );
        assert!(is_corrupt_naming(swapped.unwrap_err(), "row-a", "k1"));
        let wrong_key =
            EncryptionKeys::new("k1", secrecy::SecretBox::new(Box::new([8; 32]))).unwrap();
        let wrong = open(
            Some(&wrong_key),
            "k1",
            RecordKind::Payload,
            "row-a",
            &sealed.bytes,
        );
        assert!(is_corrupt_naming(wrong.unwrap_err(), "row-a", "k1"));
        let unknown = open(
            Some(&keys),
            "k0",
            RecordKind::Payload,
            "row-a",
            &sealed.bytes,
        );
        assert!(is_corrupt_naming(unknown.unwrap_err(), "row-a", "k0"));
        let no_ring = open(None, "k1", RecordKind::Payload, "row-a", &sealed.bytes);
        assert!(is_corrupt_naming(no_ring.unwrap_err(), "row-a", "k1"));
        let mut flipped = sealed.bytes.clone();
        flipped[30] ^= 1;
        let tampered = open(Some(&keys), "k1", RecordKind::Payload, "row-a", &flipped);
        assert!(is_corrupt_naming(tampered.unwrap_err(), "row-a", "k1"));
        let short = open(Some(&keys), "k1", RecordKind::Payload, "row-a", &[0; 10]);
        assert!(is_corrupt_naming(short.unwrap_err(), "row-a", "k1"));
    }

    #[test]
    fn every_record_gets_its_own_nonce() {
        let keys = ring();
        let a = seal(&keys, RecordKind::Payload, "row", b"same").unwrap();
        let b = seal(&keys, RecordKind::Payload, "row", b"same").unwrap();
        assert_ne!(a.bytes[..NONCE_BYTES], b.bytes[..NONCE_BYTES]);
        assert_ne!(a.bytes, b.bytes);
    }

    #[test]
    fn audit_headers_round_trip_plain_and_sealed() {
        let keys = ring();
        let json = r#"[["x-request-marker","hidden-value"]]"#;
        let expected = vec![("x-request-marker".to_owned(), "hidden-value".to_owned())];
        assert_eq!(seal_audit_headers(None, "row", json).unwrap(), json);
        assert_eq!(
            open_audit_headers(None, None, "row", json).unwrap(),
            expected
        );
        let column = seal_audit_headers(Some(&keys), "row", json).unwrap();
        assert!(!column.contains("hidden-value"), "{column}");
        assert_eq!(
            open_audit_headers(Some(&keys), Some("k1"), "row", &column).unwrap(),
            expected
        );
        let elsewhere = open_audit_headers(Some(&keys), Some("k1"), "other", &column);
        assert!(is_corrupt_naming(elsewhere.unwrap_err(), "other", "k1"));
    }
}
