//! Every request vector in `tests/vectors/signatures.jsonl` (see
//! `tests/vectors/README.md` for where it came from) must verify exactly as it
//! says: accepted with its event id and matched secret version, or refused
//! with its reason.
//!
//! `HOOKINBOX_VECTORS` adds more vector files in the same format, run *in
//! addition to* the in-repository file, never instead of it: a list of paths
//! separated like `PATH` (`:` on Unix). Paths are read as given, from the
//! crate directory when relative, so CI passes absolute ones. A named file
//! that cannot be read fails the test, so a mistyped path is never a silent
//! pass.

use crate::support;

use std::path::PathBuf;

/// The file every checkout has.
fn in_repo_vectors() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/signatures.jsonl")
}

/// The extra files named by `HOOKINBOX_VECTORS`; none when it is unset or empty.
fn extra_vectors() -> Vec<PathBuf> {
    std::env::var_os("HOOKINBOX_VECTORS")
        .map(|list| {
            std::env::split_paths(&list)
                .filter(|path| !path.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_signed_vector_verifies_as_expected() {
    for path in std::iter::once(in_repo_vectors()).chain(extra_vectors()) {
        let vectors = support::read_vectors(&path);
        // Shown with a failure, so the message says which file it was.
        println!("{}: {} vectors", path.display(), vectors.len());
        support::assert_all(&vectors);
    }
}
