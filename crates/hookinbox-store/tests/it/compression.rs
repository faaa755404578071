//! Bodies are compressed before they are sealed (docs/architecture.md §6),
//! on both backends: what compresses is stored smaller and read back byte
//! for byte, what does not is stored as received; rows written before
//! compression (sealed or plain) still read; a compressed record that was
//! changed fails the way a sealed one always has, and never decompresses
//! past its recorded length; `rewrap` keeps compressed bodies compressed;
//! a purge takes a compressed body and what its row said about it.

use crate::support;

use std::sync::Arc;

use bytes::Bytes;
use hookinbox_store::{EncryptionKeys, Fingerprint, NewEvent, RetentionPolicy, StoreError};
use support::{event, inserted, Backend};

/// One `#[tokio::test]` per scenario per backend.
macro_rules! on_both_backends {
    ($($scenario:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario(crate::support::sqlite().await).await;
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario(crate::support::postgres().await).await;
                }
            )+
        }
    };
}

on_both_backends! {
    bodies_round_trip_byte_exact_compressed_or_not,
    rows_from_before_compression_still_read,
    a_changed_compressed_record_fails_like_a_sealed_one,
    a_plain_compressed_record_never_decompresses_past_its_length,
    rewrap_keeps_compressed_bodies_compressed,
    a_purge_takes_a_compressed_body_and_its_format,
}

/// `payload_format` of a zstd frame.
const ZSTD: Option<i64> = Some(1);
/// `payload_format` of a body stored as received.
const AS_RECEIVED: Option<i64> = Some(0);

fn ring(id: &str, byte: u8) -> EncryptionKeys {
    EncryptionKeys::new(id, secrecy::SecretBox::new(Box::new([byte; 32]))).unwrap()
}

fn k1() -> Option<Arc<EncryptionKeys>> {
    Some(Arc::new(ring("k1", 1)))
}

fn k2_and_k1() -> Option<Arc<EncryptionKeys>> {
    Some(Arc::new(
        ring("k2", 2)
            .with_key("k1", secrecy::SecretBox::new(Box::new([1; 32])))
            .unwrap(),
    ))
}

/// An event of endpoint `a` with `body`.
fn event_with(id: &str, body: Vec<u8>) -> NewEvent {
    let mut event = event("a", id, b"");
    event.fingerprint = Fingerprint::of(&body);
    event.payload = Bytes::from(body);
    event
}

/// JSON of `len` bytes, as repetitive as webhook JSON is.
fn json(tag: &str, len: usize) -> Vec<u8> {
    let mut body = format!(r#"{{"id":"{tag}","items":["#).into_bytes();
    let mut n = 0;
    while body.len() < len {
        body.extend_from_slice(
            format!(r#"{{"price":"price_{n}","currency":"eur","quantity":1}},"#).as_bytes(),
        );
        n += 1;
    }
    body.truncate(len);
    body
}

/// `len` bytes zstd cannot shrink (a 64-bit LCG's high bytes).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 56) as u8
        })
        .collect()
}

/// Every read path gives back `body`, and the event's detail its length.
async fn assert_reads_back(backend: &Backend, inbox_id: &str, body: &[u8]) {
    let loaded = backend.store.load_event(inbox_id).await.unwrap().unwrap();
    assert_eq!(loaded.payload.as_deref(), Some(body), "load_event");
    let (detail, shown) = backend
        .reads
        .show_event(inbox_id, true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(shown.as_deref(), Some(body), "show_event");
    assert_eq!(detail.payload_bytes, Some(body.len()), "the body's length");
}

/// `Corrupt`, naming the row (and the key, when `key_id` is given: the
/// sealing refused it, not the fingerprint check).
fn assert_corrupt<T: std::fmt::Debug>(
    result: Result<T, StoreError>,
    inbox_id: &str,
    key_id: Option<&str>,
) {
    match result {
        Err(StoreError::Corrupt(message)) => {
            assert!(message.contains(inbox_id), "{message}");
            if let Some(key_id) = key_id {
                assert!(message.contains(&format!("key {key_id}")), "{message}");
            }
        }
        other => panic!("expected Corrupt naming {inbox_id}: {other:?}"),
    }
}

async fn bodies_round_trip_byte_exact_compressed_or_not(backend: Backend) {
    let cases: Vec<(&str, Vec<u8>, Option<i64>)> = vec![
        ("json", json("json", 10_240), ZSTD),
        ("large", json("large", 1 << 20), ZSTD),
        ("noise", noise(1, 4096), AS_RECEIVED),
        ("large-noise", noise(2, 1 << 20), AS_RECEIVED),
        ("tiny", br#"{"id":"tiny"}"#.to_vec(), AS_RECEIVED),
        ("empty", Vec::new(), AS_RECEIVED),
    ];
    // Plain (allow_plaintext), then sealed: one record format for both.
    let mut backend = backend;
    for (keys, overhead) in [(None, 0), (k1(), 40)] {
        backend = backend.reopen(keys).await;
        let sealed = overhead > 0;
        for (name, body, format) in &cases {
            let id = inserted(
                &backend.store,
                event_with(&format!("{name}-{sealed}"), body.clone()),
            )
            .await;
            assert_reads_back(&backend, &id, body).await;
            assert_eq!(
                backend.stored_body_columns(&id).await,
                (*format, Some(body.len() as i64)),
                "{name}, sealed: {sealed}"
            );
            let stored = backend.stored_payload(&id).await;
            if *format == ZSTD {
                assert!(
                    stored.len() < body.len() / 4,
                    "{name}: {} bytes stored for {}",
                    stored.len(),
                    body.len()
                );
            } else {
                assert_eq!(stored.len(), body.len() + overhead, "{name}");
            }
        }
    }
}

async fn rows_from_before_compression_still_read(backend: Backend) {
    // Before compression, a body was stored as received: exactly what is
    // stored now for a body that does not compress, with the two columns
    // NULL. Such rows, plain and sealed, read as they always did.
    let plain_body = noise(3, 2048);
    let plain = inserted(&backend.store, event_with("plain", plain_body.clone())).await;
    let backend = backend.reopen(k1()).await;
    let sealed_body = noise(4, 2048);
    let sealed = inserted(&backend.store, event_with("sealed", sealed_body.clone())).await;
    for id in [&plain, &sealed] {
        assert_eq!(backend.stored_body_columns(id).await.0, AS_RECEIVED);
        backend.set_stored_body_columns(id, None, None).await;
    }
    assert_reads_back(&backend, &plain, &plain_body).await;
    assert_reads_back(&backend, &sealed, &sealed_body).await;
    assert_eq!(backend.stored_key_id(&plain).await, None);
    assert_eq!(backend.stored_key_id(&sealed).await.as_deref(), Some("k1"));
}

async fn a_changed_compressed_record_fails_like_a_sealed_one(backend: Backend) {
    let backend = backend.reopen(k1()).await;
    let flipped = inserted(&backend.store, event_with("flipped", json("flipped", 8192))).await;
    let relabelled = inserted(
        &backend.store,
        event_with("relabelled", json("relabelled", 8192)),
    )
    .await;
    let untouched_body = json("untouched", 8192);
    let untouched = inserted(
        &backend.store,
        event_with("untouched", untouched_body.clone()),
    )
    .await;
    assert_eq!(backend.stored_body_columns(&flipped).await.0, ZSTD);

    // A byte of the sealed frame, past the 24-byte nonce.
    backend.flip_stored_payload_byte(&flipped, 30).await;
    assert_corrupt(
        backend.store.load_event(&flipped).await,
        &flipped,
        Some("k1"),
    );
    assert_corrupt(
        backend.reads.show_event(&flipped, true).await,
        &flipped,
        Some("k1"),
    );

    // The format is part of the sealing: a frame declared as received (or
    // a row from before compression) does not open.
    backend
        .set_stored_body_columns(&relabelled, AS_RECEIVED, Some(8192))
        .await;
    assert_corrupt(
        backend.store.load_event(&relabelled).await,
        &relabelled,
        Some("k1"),
    );
    backend
        .set_stored_body_columns(&relabelled, None, None)
        .await;
    assert_corrupt(
        backend.store.load_event(&relabelled).await,
        &relabelled,
        Some("k1"),
    );
    // An unknown format is refused before anything is opened.
    backend
        .set_stored_body_columns(&relabelled, Some(7), Some(8192))
        .await;
    assert_corrupt(
        backend.store.load_event(&relabelled).await,
        &relabelled,
        None,
    );

    assert_reads_back(&backend, &untouched, &untouched_body).await;
}

async fn a_plain_compressed_record_never_decompresses_past_its_length(backend: Backend) {
    // Without keys nothing authenticates the frame: the recorded length
    // is what bounds it. 1 MiB of zeros is a ~100-byte frame.
    let zeros = vec![0_u8; 1 << 20];
    let id = inserted(&backend.store, event_with("zeros", zeros.clone())).await;
    assert!(backend.stored_payload(&id).await.len() < 200);
    assert_reads_back(&backend, &id, &zeros).await;
    for lie in [Some(1000), Some((1 << 20) + 1), Some(1 << 40), None] {
        backend.set_stored_body_columns(&id, ZSTD, lie).await;
        assert_corrupt(backend.store.load_event(&id).await, &id, None);
    }
    // A frame changed in place fails too (the fingerprint, if not zstd).
    backend
        .set_stored_body_columns(&id, ZSTD, Some(1 << 20))
        .await;
    backend.flip_stored_payload_byte(&id, 20).await;
    assert_corrupt(backend.store.load_event(&id).await, &id, None);
}

async fn rewrap_keeps_compressed_bodies_compressed(backend: Backend) {
    let plain_body = json("plain", 16_384);
    let plain = inserted(&backend.store, event_with("plain", plain_body.clone())).await;
    let backend = backend.reopen(k1()).await;
    let sealed_body = json("sealed", 16_384);
    let sealed = inserted(&backend.store, event_with("sealed", sealed_body.clone())).await;
    let noise_body = noise(5, 4096);
    let as_received = inserted(&backend.store, event_with("noise", noise_body.clone())).await;
    // A row from before compression, under k1.
    backend
        .set_stored_body_columns(&as_received, None, None)
        .await;

    let backend = backend.reopen(k2_and_k1()).await;
    while !backend.rewrap_batch(2).await.unwrap().is_done() {}
    for (id, body, format) in [
        (&plain, &plain_body, ZSTD),
        (&sealed, &sealed_body, ZSTD),
        (&as_received, &noise_body, AS_RECEIVED),
    ] {
        assert_eq!(backend.stored_key_id(id).await.as_deref(), Some("k2"));
        assert_eq!(
            backend.stored_body_columns(id).await,
            (format, Some(body.len() as i64))
        );
        assert_reads_back(&backend, id, body).await;
    }
    assert!(backend.stored_payload(&sealed).await.len() < sealed_body.len() / 4);

    // Under k2 alone: nothing needs k1 any more.
    let backend = backend.reopen(Some(Arc::new(ring("k2", 2)))).await;
    assert_reads_back(&backend, &plain, &plain_body).await;
    assert_reads_back(&backend, &sealed, &sealed_body).await;
}

async fn a_purge_takes_a_compressed_body_and_its_format(backend: Backend) {
    let backend = backend.reopen(k1()).await;
    let mut old = event_with("old", json("old", 8192));
    old.received_at_ms = 1_000;
    let old = inserted(&backend.store, old).await;
    let young_body = json("young", 8192);
    let mut young = event_with("young", young_body.clone());
    young.received_at_ms = 10_000;
    let young = inserted(&backend.store, young).await;
    assert_eq!(backend.stored_body_columns(&old).await.0, ZSTD);

    let policy = RetentionPolicy {
        raw_payload: Some(std::time::Duration::from_secs(5)),
        ..RetentionPolicy::default()
    };
    let progress = backend.purge_batch(&policy, 10_500, 10).await;
    assert_eq!(progress.purged.raw_payloads, 1);
    let loaded = backend.store.load_event(&old).await.unwrap().unwrap();
    assert_eq!(loaded.payload, None, "the body is gone");
    let (detail, _) = backend
        .reads
        .show_event(&old, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(detail.payload_bytes, None, "and its length with it");
    assert_eq!(backend.stored_body_columns(&old).await, (None, None));
    assert_reads_back(&backend, &young, &young_body).await;
}
