//! zstd compression of one body, before it is sealed (docs/architecture.md
//! §6): used only when it makes the body smaller, and undone only up to the
//! length the row recorded, so a stored record can never make a reader
//! allocate more than the body it was (no decompression bomb).
//!
//! The level and the size below which nothing is tried come from
//! measurement on webhook JSON (bench/RESULTS.md, "Compression";
//! `cargo run --release -p hookinbox-store --example compression_levels`).
//! Each thread keeps one compression and one decompression context: making
//! one costs more than compressing a 10 KiB body with it.
//!
//! No trained dictionary: the bodies that gain from one are the small ones,
//! which are a small share of the bytes; a dictionary would have to be
//! trained per provider, versioned and kept as long as any row it wrote,
//! and a lost dictionary would make those bodies unreadable.

use std::cell::RefCell;

/// The zstd level bodies are compressed at.
pub(crate) const LEVEL: i32 = 1;

/// Bodies shorter than this are stored as received without trying: a zstd
/// frame's header costs a few bytes, and below this size JSON rarely gains
/// enough to pay for it and for the decompression on every read.
pub(crate) const MIN_BODY_BYTES: usize = 128;

/// The largest body any endpoint can accept (`max_body_bytes` is at most
/// 64 MiB): no stored record decompresses past it, whatever its row says.
pub(crate) const MAX_BODY_BYTES: usize = 64 << 20;

thread_local! {
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// `body` as one zstd frame (its length in the header), if that is shorter
/// than `body`; `None` when it is not, when `body` is too short to try, or
/// when zstd fails (the body is then stored as received, which is always
/// correct).
pub(crate) fn compress_if_smaller(body: &[u8]) -> Option<Vec<u8>> {
    let mut frame = vec![0; room_for(body.len())];
    let written = compress_into(body, &mut frame)?;
    frame.truncate(written);
    Some(frame)
}

/// The room to give [`compress_into`] for a body of `body_len` bytes: one
/// byte less, as a frame that is not smaller is not wanted.
pub(crate) fn room_for(body_len: usize) -> usize {
    body_len.saturating_sub(1)
}

/// Writes `body` as one zstd frame at the start of `frame` and returns its
/// length, if it fits (`frame` is [`room_for`] the body: zstd stops with an
/// error as soon as the frame would not be smaller); `None` as for
/// [`compress_if_smaller`]. The frame can so be written where it is to be
/// sealed, with no copy (`sealed::SealBuffer`).
pub(crate) fn compress_into(body: &[u8], frame: &mut [u8]) -> Option<usize> {
    if body.len() < MIN_BODY_BYTES {
        return None;
    }
    let written = COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = zstd::bulk::Compressor::new(LEVEL).ok();
        }
        let compressor = cell.as_mut()?;
        compressor.compress_to_buffer(body, frame).ok()
    })?;
    (written < body.len()).then_some(written)
}

/// Why a stored frame could not be decompressed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecompressError {
    #[error("its recorded length {0} is more than any body can be")]
    LengthTooLarge(usize),
    #[error("it does not decompress to its recorded length of {recorded} bytes")]
    NotTheRecordedLength { recorded: usize },
}

/// The body that `frame` compresses, which must be exactly `raw_len` bytes:
/// decompression stops at `raw_len`, so a frame that claims or yields more
/// fails without allocating more.
pub(crate) fn decompress(frame: &[u8], raw_len: usize) -> Result<Vec<u8>, DecompressError> {
    if raw_len > MAX_BODY_BYTES {
        return Err(DecompressError::LengthTooLarge(raw_len));
    }
    let wrong_length = || DecompressError::NotTheRecordedLength { recorded: raw_len };
    let mut body = Vec::with_capacity(raw_len);
    DECOMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = zstd::bulk::Decompressor::new().ok();
        }
        let decompressor = cell.as_mut().ok_or_else(wrong_length)?;
        decompressor
            .decompress_to_buffer(frame, &mut body)
            .map_err(|_| wrong_length())
    })?;
    if body.len() != raw_len {
        return Err(wrong_length());
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(len: usize) -> Vec<u8> {
        let mut body = br#"{"id":"evt_1","type":"invoice.paid","items":["#.to_vec();
        while body.len() < len {
            body.extend_from_slice(br#"{"price":"price_123","quantity":1},"#);
        }
        body.truncate(len);
        body
    }

    #[test]
    fn json_compresses_and_comes_back_exactly() {
        let body = json(10_000);
        let frame = compress_if_smaller(&body).expect("JSON compresses");
        assert!(frame.len() < body.len() / 4, "{} bytes", frame.len());
        assert_eq!(decompress(&frame, body.len()).unwrap(), body);
    }

    #[test]
    fn short_and_incompressible_bodies_are_not_compressed() {
        assert_eq!(compress_if_smaller(b""), None);
        assert_eq!(compress_if_smaller(&json(MIN_BODY_BYTES - 1)), None);
        // Bytes of a 64-bit LCG: no redundancy for zstd to find.
        let mut state = 7_u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                (state >> 56) as u8
            })
            .collect();
        assert_eq!(compress_if_smaller(&noise), None);
    }

    #[test]
    fn a_frame_is_never_decompressed_past_its_recorded_length() {
        // 1 MiB of zeros compresses to a few dozen bytes: a bomb if the
        // reader trusted the frame instead of the row.
        let zeros = vec![0_u8; 1 << 20];
        let frame = compress_if_smaller(&zeros).unwrap();
        assert!(frame.len() < 100);
        assert!(matches!(
            decompress(&frame, 1000),
            Err(DecompressError::NotTheRecordedLength { recorded: 1000 })
        ));
        assert!(matches!(
            decompress(&frame, (1 << 20) + 1),
            Err(DecompressError::NotTheRecordedLength { .. })
        ));
        assert!(matches!(
            decompress(&frame, MAX_BODY_BYTES + 1),
            Err(DecompressError::LengthTooLarge(_))
        ));
        assert_eq!(decompress(&frame, 1 << 20).unwrap(), zeros);
    }

    #[test]
    fn bytes_that_are_not_a_frame_fail() {
        assert!(decompress(b"{\"not\":\"zstd\"}", 14).is_err());
        let body = json(4000);
        let mut frame = compress_if_smaller(&body).unwrap();
        frame.truncate(frame.len() - 3);
        assert!(decompress(&frame, body.len()).is_err());
    }
}
