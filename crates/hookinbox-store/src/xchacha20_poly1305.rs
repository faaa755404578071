//! XChaCha20-Poly1305 as `draft-irtf-cfrg-xchacha-03` §2.3 builds it from
//! two primitives: HChaCha20 of the key and the nonce's first 16 bytes
//! gives a subkey (the `chacha20` crate's `hchacha`), and the record is
//! sealed with the ChaCha20-Poly1305 of RFC 8439 under that subkey, with
//! the nonce `0u32 ‖ the nonce's last 8 bytes` (ring).
//!
//! Why not the `chacha20poly1305` crate, which did this until now: ring's
//! ChaCha20-Poly1305 is BoringSSL's assembly, twice as fast on a 8 KiB body
//! and four times on a 300-byte record as RustCrypto's on the same machine,
//! and sealing was the part of the default configuration's cost that
//! issue 20 bounds at 5 % (bench/RESULTS.md §18). The bytes are the same:
//! records sealed before open here, and the other way round; the tests
//! check both against the draft's test vector and against the
//! `chacha20poly1305` crate.

use chacha20::cipher::consts::U10;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305};
use zeroize::Zeroize;

/// Bytes of a key.
pub(crate) const KEY_BYTES: usize = 32;
/// Bytes of a nonce.
pub(crate) const NONCE_BYTES: usize = 24;
/// Bytes of the authentication tag.
pub(crate) const TAG_BYTES: usize = 16;

/// Why sealing or opening failed. Neither names the key or the bytes.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum AeadError {
    /// ring refused to seal: the plaintext is past what ChaCha20-Poly1305
    /// seals under one nonce (256 GiB).
    #[error("refused to seal")]
    SealRefused,
    /// A wrong key, nonce or associated data, or a changed byte.
    #[error("does not authenticate")]
    DoesNotAuthenticate,
}

/// Encrypts `in_out` in place and returns its tag.
pub(crate) fn seal_in_place(
    key: &[u8; KEY_BYTES],
    nonce: &[u8; NONCE_BYTES],
    aad: &[u8],
    in_out: &mut [u8],
) -> Result<[u8; TAG_BYTES], AeadError> {
    let (subkey, inner_nonce) = derive(key, nonce).map_err(|_| AeadError::SealRefused)?;
    let tag = subkey
        .seal_in_place_separate_tag(inner_nonce, Aad::from(aad), in_out)
        .map_err(|_| AeadError::SealRefused)?;
    let mut bytes = [0u8; TAG_BYTES];
    bytes.copy_from_slice(tag.as_ref());
    Ok(bytes)
}

/// Checks `ciphertext_and_tag` and decrypts it in place; returns the
/// plaintext, the ciphertext's part of the buffer.
pub(crate) fn open_in_place<'a>(
    key: &[u8; KEY_BYTES],
    nonce: &[u8; NONCE_BYTES],
    aad: &[u8],
    ciphertext_and_tag: &'a mut [u8],
) -> Result<&'a mut [u8], AeadError> {
    let (subkey, inner_nonce) = derive(key, nonce).map_err(|_| AeadError::DoesNotAuthenticate)?;
    subkey
        .open_in_place(inner_nonce, Aad::from(aad), ciphertext_and_tag)
        .map_err(|_| AeadError::DoesNotAuthenticate)
}

/// The ChaCha20-Poly1305 key and nonce of one XChaCha20-Poly1305 key and
/// nonce. (ring refuses only a key that is not 32 bytes.)
fn derive(
    key: &[u8; KEY_BYTES],
    nonce: &[u8; NONCE_BYTES],
) -> Result<(LessSafeKey, Nonce), ring::error::Unspecified> {
    let (head, tail) = nonce.split_at(16);
    let mut subkey: [u8; KEY_BYTES] = chacha20::hchacha::<U10>(key.into(), head.into()).into();
    let unbound = UnboundKey::new(&CHACHA20_POLY1305, &subkey);
    subkey.zeroize();
    let mut inner = [0u8; 12];
    inner[4..].copy_from_slice(tail);
    Ok((
        LessSafeKey::new(unbound?),
        Nonce::assume_unique_for_key(inner),
    ))
}

#[cfg(test)]
mod tests {
    use chacha20poly1305::aead::{AeadInPlace, KeyInit};
    use chacha20poly1305::XChaCha20Poly1305;

    use super::*;

    #[test]
    fn it_gives_the_drafts_test_vector() {
        // draft-irtf-cfrg-xchacha-03, appendix A.3.1.
        let key: [u8; 32] =
            hex::decode("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
                .unwrap()
                .try_into()
                .unwrap();
        let nonce: [u8; 24] = hex::decode("404142434445464748494a4b4c4d4e4f5051525354555657")
            .unwrap()
            .try_into()
            .unwrap();
        let aad = hex::decode("50515253c0c1c2c3c4c5c6c7").unwrap();
        let plaintext = b"Ladies and Gentlemen of the class of '99: If I could offer you \
            only one tip for the future, sunscreen would be it.";
        let ciphertext = hex::decode(
            "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb\
             731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452\
             2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9\
             21f9664c97637da9768812f615c68b13b52e",
        )
        .unwrap();
        let tag = hex::decode("c0875924c1c7987947deafd8780acf49").unwrap();

        let mut sealed = plaintext.to_vec();
        let got_tag = seal_in_place(&key, &nonce, &aad, &mut sealed).unwrap();
        assert_eq!(sealed, ciphertext);
        assert_eq!(got_tag.as_slice(), tag.as_slice());

        let mut both = [ciphertext, tag].concat();
        let opened = open_in_place(&key, &nonce, &aad, &mut both).unwrap();
        assert_eq!(opened, plaintext.as_slice());
    }

    #[test]
    fn its_records_are_the_chacha20poly1305_crates_byte_for_byte() {
        // The lengths around ChaCha20's 64-byte blocks and Poly1305's
        // 16-byte ones, a small record and the sizes of real bodies.
        let key = [0x5a; 32];
        for (i, len) in [0, 1, 15, 16, 17, 63, 64, 65, 300, 4096, 8000, 65_537]
            .into_iter()
            .enumerate()
        {
            let nonce: [u8; 24] = std::array::from_fn(|j| (i * 24 + j) as u8);
            let aad = format!("payload zstd\0row-{i}");
            let plaintext: Vec<u8> = (0..len).map(|j| (j * 7 + i) as u8).collect();
            let theirs = XChaCha20Poly1305::new(&key.into());

            let mut ours = plaintext.clone();
            let our_tag = seal_in_place(&key, &nonce, aad.as_bytes(), &mut ours).unwrap();
            let mut their_sealed = plaintext.clone();
            let their_tag = theirs
                .encrypt_in_place_detached(&nonce.into(), aad.as_bytes(), &mut their_sealed)
                .unwrap();
            assert_eq!(ours, their_sealed, "ciphertext of {len} bytes");
            assert_eq!(our_tag[..], their_tag[..], "tag of {len} bytes");

            // A record they sealed opens here, and one sealed here opens there.
            let mut record = [their_sealed.clone(), their_tag.to_vec()].concat();
            let opened = open_in_place(&key, &nonce, aad.as_bytes(), &mut record).unwrap();
            assert_eq!(opened, plaintext.as_slice());
            let mut back = ours.clone();
            theirs
                .decrypt_in_place_detached(
                    &nonce.into(),
                    aad.as_bytes(),
                    &mut back,
                    &our_tag.into(),
                )
                .unwrap();
            assert_eq!(back, plaintext);
        }
    }

    #[test]
    fn a_changed_byte_key_nonce_or_associated_data_does_not_open() {
        let key = [1; 32];
        let nonce = [2; 24];
        let mut sealed = b"{\"amount\":100}".to_vec();
        let tag = seal_in_place(&key, &nonce, b"payload\0row", &mut sealed).unwrap();
        let record = [sealed, tag.to_vec()].concat();
        let opens = |key: &[u8; 32], nonce: &[u8; 24], aad: &[u8], bytes: &[u8]| {
            let mut bytes = bytes.to_vec();
            open_in_place(key, nonce, aad, &mut bytes).map(|plain| plain.to_vec())
        };
        assert_eq!(
            opens(&key, &nonce, b"payload\0row", &record).unwrap(),
            b"{\"amount\":100}"
        );
        for at in [0, record.len() - 1] {
            let mut flipped = record.clone();
            flipped[at] ^= 1;
            assert_eq!(
                opens(&key, &nonce, b"payload\0row", &flipped),
                Err(AeadError::DoesNotAuthenticate)
            );
        }
        let other_nonce_tail = {
            let mut nonce = nonce;
            nonce[23] ^= 1;
            nonce
        };
        let other_nonce_head = {
            let mut nonce = nonce;
            nonce[0] ^= 1;
            nonce
        };
        for (key, nonce, aad) in [
            ([3; 32], nonce, b"payload\0row".as_slice()),
            (key, other_nonce_tail, b"payload\0row".as_slice()),
            (key, other_nonce_head, b"payload\0row".as_slice()),
            (key, nonce, b"payload\0rox".as_slice()),
        ] {
            assert_eq!(
                opens(&key, &nonce, aad, &record),
                Err(AeadError::DoesNotAuthenticate)
            );
        }
        let mut too_short = vec![0; TAG_BYTES - 1];
        assert_eq!(
            open_in_place(&key, &nonce, b"", &mut too_short).map(|p| p.len()),
            Err(AeadError::DoesNotAuthenticate)
        );
    }
}
