//! MEASUREMENT ONLY: what sealing one record costs with the store's
//! XChaCha20-Poly1305 (`src/xchacha20_poly1305.rs`, compiled in here as it
//! is) against the `chacha20poly1305` crate it replaced, at the sizes a
//! record has: audit headers (~300 B), the benchmark's mean compressed body
//! (~8 KiB), a large body (64 KiB). Both seal the same buffer in place, a
//! new cipher per record as the store makes one, and must give the same
//! bytes. Run in release mode (bench/RESULTS.md §18):
//!
//! ```text
//! cargo run --release -p hookinbox-store --example seal_speed
//! ```
//!
//! Prints, per size, the median of five rounds of ns per record for each,
//! and their ratio. CPU-bound, one thread: a busy neighbour changes both
//! the same way, and the ratio is what to read.
//!
//! A last column, for reference only, is ring's AES-256-GCM over the same
//! bytes with one key set up per record: what a cipher run by the CPU's AES
//! instructions would cost. It is not a drop-in replacement (a 96-bit
//! nonce is too short to draw at random for every record under one key, so
//! it would need a key derived per record), and the store does not use it.

#[path = "../src/xchacha20_poly1305.rs"]
#[allow(dead_code)]
mod xchacha20_poly1305;

use std::hint::black_box;
use std::time::Instant;

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::XChaCha20Poly1305;
use ring::aead;

fn main() {
    let key = [0x42; 32];
    let nonce: [u8; 24] = std::array::from_fn(|i| i as u8);
    let aad = b"payload zstd\0ibx_01JE7Y4Q6ZK3V9W2N8M5R1T0AB";
    println!(
        "| record bytes | chacha20poly1305 crate ns | ours ns | ratio | ours GB/s | ring AES-256-GCM ns |"
    );
    println!("|---|---|---|---|---|---|");
    for len in [300_usize, 8 * 1024, 64 * 1024] {
        let plaintext: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
        same_bytes(&key, &nonce, aad, &plaintext);
        let records = (400_000_000 / (len + 200)).max(200);
        let mut theirs = Vec::new();
        let mut ours = Vec::new();
        let mut aes = Vec::new();
        for _ in 0..5 {
            let mut buffer = plaintext.clone();
            let started = Instant::now();
            for _ in 0..records {
                let cipher = XChaCha20Poly1305::new(&key.into());
                let tag = cipher.encrypt_in_place_detached(&nonce.into(), aad, &mut buffer);
                black_box(tag.ok());
            }
            theirs.push(started.elapsed().as_nanos() as f64 / records as f64);
            let started = Instant::now();
            for _ in 0..records {
                let tag = xchacha20_poly1305::seal_in_place(&key, &nonce, aad, &mut buffer);
                black_box(tag.ok());
            }
            ours.push(started.elapsed().as_nanos() as f64 / records as f64);
            let started = Instant::now();
            for _ in 0..records {
                black_box(aes_256_gcm_seal(&key, aad, &mut buffer));
            }
            aes.push(started.elapsed().as_nanos() as f64 / records as f64);
        }
        let (theirs, ours, aes) = (median(theirs), median(ours), median(aes));
        println!(
            "| {len} | {theirs:.0} | {ours:.0} | {:.2}× | {:.2} | {aes:.0} |",
            theirs / ours,
            len as f64 / ours
        );
    }
}

/// ring's AES-256-GCM over `buffer` in place, its key set up for this one
/// record (the reference column; the nonce is fixed, as nothing here is
/// kept).
fn aes_256_gcm_seal(key: &[u8; 32], aad: &[u8], buffer: &mut [u8]) -> Option<aead::Tag> {
    let key = aead::LessSafeKey::new(aead::UnboundKey::new(&aead::AES_256_GCM, key).ok()?);
    key.seal_in_place_separate_tag(
        aead::Nonce::assume_unique_for_key([1; aead::NONCE_LEN]),
        aead::Aad::from(aad),
        buffer,
    )
    .ok()
}

/// Both seal `plaintext` to the same ciphertext and tag.
fn same_bytes(key: &[u8; 32], nonce: &[u8; 24], aad: &[u8], plaintext: &[u8]) {
    let mut theirs = plaintext.to_vec();
    let their_tag = XChaCha20Poly1305::new(key.into())
        .encrypt_in_place_detached(nonce.into(), aad, &mut theirs)
        .map(|tag| tag.to_vec());
    let mut ours = plaintext.to_vec();
    let our_tag = xchacha20_poly1305::seal_in_place(key, nonce, aad, &mut ours)
        .map(|tag| tag.to_vec())
        .map_err(|_| ());
    assert!(
        theirs == ours && their_tag.ok() == our_tag.ok(),
        "the two differ at {} bytes",
        plaintext.len()
    );
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
