//! Every request vector in `shared/vectors/signatures.jsonl` (signed by the
//! providers' own SDKs) must verify exactly as it says: accepted with its
//! event id and matched secret version, or refused with its reason.

mod support;

use std::path::PathBuf;

/// The shared vectors sit beside the repository checkout (`../shared`);
/// `HOOKINBOX_VECTORS` points elsewhere. A missing file fails the test.
fn vectors_path() -> PathBuf {
    if let Ok(path) = std::env::var("HOOKINBOX_VECTORS") {
        return PathBuf::from(path);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors/signatures.jsonl")
}

#[test]
fn every_shared_vector_verifies_as_expected() {
    let vectors = support::read_vectors(&vectors_path());
    support::assert_all(&vectors);
}
