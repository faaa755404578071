//! Keys of PostgreSQL advisory locks. Four uses, all transaction-scoped
//! (`pg_advisory_xact_lock`, released at COMMIT or ROLLBACK, so a crashed
//! process never leaves one behind):
//!
//! - `migrate`: one migration at a time per schema, so ten processes
//!   starting together apply each migration once.
//! - `fingerprint`: one ingress transaction at a time checks-and-inserts an
//!   event of an endpoint with a given body fingerprint (events whose id is
//!   unsigned are deduplicated by body within a window, which no UNIQUE
//!   constraint can express).
//! - `ordering`: one lease decision at a time per ordered object (endpoint,
//!   target, object id), so two workers never both put a version of one
//!   object in flight.
//! - `learned secret`: one handover at a time per endpoint, so its learned
//!   secrets are numbered in turn and bounded (`learned_secrets`).
//!
//! A key is the first 8 bytes of a SHA-256 over the schema, the purpose and
//! the parts, each length-prefixed: every process computes the same key
//! for the same thing, and a collision only makes two unrelated
//! transactions wait for each other, never merges them.

use sha2::{Digest, Sha256};

/// What a lock serialises.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LockPurpose {
    Migrate,
    Fingerprint,
    Ordering,
    LearnedSecret,
}

impl LockPurpose {
    fn name(self) -> &'static str {
        match self {
            LockPurpose::Migrate => "migrate",
            LockPurpose::Fingerprint => "fingerprint",
            LockPurpose::Ordering => "ordering",
            LockPurpose::LearnedSecret => "learned secret",
        }
    }
}

/// The lock key of `parts` for `purpose` in `schema`.
pub(crate) fn lock_key(schema: &str, purpose: LockPurpose, parts: &[&[u8]]) -> i64 {
    let mut hash = Sha256::new();
    for part in [schema.as_bytes(), purpose.name().as_bytes()]
        .into_iter()
        .chain(parts.iter().copied())
    {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    let digest = hash.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_not_merged_by_concatenation() {
        let a = lock_key("s", LockPurpose::Ordering, &[b"ab", b"c"]);
        let b = lock_key("s", LockPurpose::Ordering, &[b"a", b"bc"]);
        assert_ne!(a, b);
        assert_eq!(a, lock_key("s", LockPurpose::Ordering, &[b"ab", b"c"]));
        assert_ne!(a, lock_key("t", LockPurpose::Ordering, &[b"ab", b"c"]));
        assert_ne!(a, lock_key("s", LockPurpose::Fingerprint, &[b"ab", b"c"]));
    }
}
