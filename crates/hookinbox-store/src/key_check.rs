//! Keys are checked before serving (docs/architecture.md §6): the key ring
//! is compared with the database, so a wrong key under a known id, or a
//! ring that lost a key rows are sealed under, stops the start instead of
//! sealing new rows under one key while old ones need another.
//!
//! Each key id gets a check value in the `encryption_key_check` table: a
//! fixed label sealed under that key with the key id as associated data
//! (`sealed`, [`RecordKind::KeyCheck`]), recorded the first time the id is
//! seen and verified on every start after. A key that opens it is the key
//! the id was first used with; any other key, however valid, fails. The
//! key ids that sealed rows are read from the `inbox_key_id` index (one
//! index seek per distinct id, so the check costs the same on ten rows
//! and ten million, and nothing on the write path).
//!
//! Trust on first use: a database from before check values (or a key id
//! never seen) records whatever key it is first opened with. A wrong key
//! on that first start is only caught where rows are sealed under an id
//! the ring lacks, or when a body fails to open.

use serde::Serialize;

use crate::sealed::{self, RecordKind};
use crate::{EncryptionKeys, StoreError};

/// What every check value seals.
const LABEL: &[u8] = b"hookinbox encryption key check v1";

/// Whether a check may write check values for key ids that have none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCheckMode {
    /// Read only (`keys check`, operator reads).
    Verify,
    /// Record the ring's missing check values once everything else
    /// matches (`serve`, `work`, commands that write).
    Record,
}

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KeyCheck {
    /// Key ids of the ring whose stored check value opened under the
    /// configured key.
    pub verified: Vec<String>,
    /// Key ids of the ring that had no check value; recorded by this check
    /// when it is in [`KeyCheckMode::Record`] and nothing mismatched.
    pub unrecorded: Vec<String>,
    /// Of `unrecorded`, the ones this check recorded.
    pub recorded: Vec<String>,
    /// Key ids that sealed at least one row.
    pub used: Vec<String>,
    /// Whether the database holds any event or check value: a development
    /// key is only made for one that holds neither.
    pub holds_data: bool,
    /// What does not match; empty when the ring fits the database.
    pub mismatches: Vec<KeyMismatch>,
}

/// One way the ring does not fit the database. Names the key id, never a
/// key's bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum KeyMismatch {
    /// The configured key under this id is not the one the id was first
    /// used with.
    #[error(
        "encryption key `{key_id}` is not the key this database recorded under that id \
         (its check value does not open): configure the key `{key_id}` was first used with"
    )]
    WrongKey { key_id: String },
    /// Rows are sealed under a key id the ring does not have.
    #[error(
        "rows are sealed under encryption key `{key_id}`, which is not in the key ring: \
         add it back as an [[encryption.key]] (rewrap before removing a key)"
    )]
    MissingKey { key_id: String },
}

impl KeyMismatch {
    /// The key id it is about.
    pub fn key_id(&self) -> &str {
        match self {
            KeyMismatch::WrongKey { key_id } | KeyMismatch::MissingKey { key_id } => key_id,
        }
    }
}

/// The ring does not fit the database: every mismatch, `; `-separated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct KeyRingMismatch(pub Vec<KeyMismatch>);

impl KeyCheck {
    /// The check itself when nothing mismatched.
    pub fn matched(self) -> Result<KeyCheck, KeyRingMismatch> {
        if self.mismatches.is_empty() {
            Ok(self)
        } else {
            Err(KeyRingMismatch(self.mismatches))
        }
    }
}

/// What a backend reads for a check.
#[derive(Debug, Default)]
pub(crate) struct KeyFacts {
    /// Stored check values by key id.
    pub(crate) stored: Vec<(String, Vec<u8>)>,
    /// Distinct `payload_key_id`s of the inbox.
    pub(crate) used: Vec<String>,
    /// Whether the inbox has a row.
    pub(crate) holds_events: bool,
}

/// Compares the ring (`None`: no keys, every stored body plain) with what
/// the database holds.
pub(crate) fn evaluate(keys: Option<&EncryptionKeys>, facts: &KeyFacts) -> KeyCheck {
    let mut check = KeyCheck {
        used: facts.used.clone(),
        holds_data: facts.holds_events || !facts.stored.is_empty(),
        ..KeyCheck::default()
    };
    let in_ring = |id: &str| keys.is_some_and(|keys| keys.key(id).is_some());
    if let Some(keys) = keys {
        for id in keys.key_ids() {
            match facts.stored.iter().find(|(stored, _)| stored == id) {
                None => check.unrecorded.push(id.to_owned()),
                Some((_, value)) => {
                    let opened = sealed::open(Some(keys), id, RecordKind::KeyCheck, id, value);
                    if opened.is_ok_and(|label| label == LABEL) {
                        check.verified.push(id.to_owned());
                    } else {
                        check.mismatches.push(KeyMismatch::WrongKey {
                            key_id: id.to_owned(),
                        });
                    }
                }
            }
        }
    }
    // A stored value for an id the ring no longer has is a retired key:
    // only the rows it still seals matter, and those are named here.
    for id in &facts.used {
        if !in_ring(id) {
            check
                .mismatches
                .push(KeyMismatch::MissingKey { key_id: id.clone() });
        }
    }
    check
}

/// The check values to record: one per key id of `ids`, each the label
/// sealed under that key of `keys`.
pub(crate) fn check_values(
    keys: &EncryptionKeys,
    ids: &[String],
) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
    ids.iter()
        .map(|id| {
            let sealed = sealed::seal_under(keys, id, RecordKind::KeyCheck, id, LABEL)?;
            Ok((id.clone(), sealed.bytes))
        })
        .collect()
}

/// Whether a check in `mode` that found `check` is to record values.
pub(crate) fn should_record(mode: KeyCheckMode, check: &KeyCheck) -> bool {
    mode == KeyCheckMode::Record && check.mismatches.is_empty() && !check.unrecorded.is_empty()
}

/// The check after recording: what the database now holds (another
/// process may have recorded a different key first, and then this one
/// fails), with the ids it recorded.
pub(crate) fn after_recording(
    keys: Option<&EncryptionKeys>,
    facts: &KeyFacts,
    before: KeyCheck,
) -> KeyCheck {
    let mut check = evaluate(keys, facts);
    check.recorded = before
        .unrecorded
        .into_iter()
        .filter(|id| check.verified.contains(id))
        .collect();
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(keys: &[(&str, u8)]) -> EncryptionKeys {
        let mut ring = EncryptionKeys::new(
            keys[0].0,
            secrecy::SecretBox::new(Box::new([keys[0].1; 32])),
        )
        .unwrap();
        for (id, byte) in &keys[1..] {
            ring = ring
                .with_key(*id, secrecy::SecretBox::new(Box::new([*byte; 32])))
                .unwrap();
        }
        ring
    }

    fn facts(stored: Vec<(String, Vec<u8>)>, used: &[&str]) -> KeyFacts {
        KeyFacts {
            stored,
            used: used.iter().map(|id| id.to_string()).collect(),
            holds_events: !used.is_empty(),
        }
    }

    #[test]
    fn a_recorded_key_verifies_and_another_key_under_its_id_does_not() {
        let k1 = ring(&[("k1", 1)]);
        let stored = check_values(&k1, &["k1".into()]).unwrap();
        assert!(!stored[0].1.windows(LABEL.len()).any(|w| w == LABEL));
        let check = evaluate(Some(&k1), &facts(stored.clone(), &["k1"]));
        assert_eq!(check.verified, ["k1"]);
        assert!(check.mismatches.is_empty() && check.holds_data);

        let wrong = ring(&[("k1", 9)]);
        let check = evaluate(Some(&wrong), &facts(stored.clone(), &["k1"]));
        assert_eq!(
            check.mismatches,
            [KeyMismatch::WrongKey {
                key_id: "k1".into()
            }]
        );
        let message = check.matched().unwrap_err().to_string();
        assert!(message.contains("`k1`"), "{message}");

        // A value moved to another id does not open there: the id is its
        // associated data.
        let k2 = ring(&[("k2", 1)]);
        let moved = vec![("k2".to_owned(), stored[0].1.clone())];
        assert_eq!(
            evaluate(Some(&k2), &facts(moved, &[])).mismatches,
            [KeyMismatch::WrongKey {
                key_id: "k2".into()
            }]
        );
    }

    #[test]
    fn used_key_ids_must_be_in_the_ring_and_retired_ones_need_not() {
        let k1 = ring(&[("k1", 1)]);
        let stored = check_values(&k1, &["k1".into()]).unwrap();
        let k2 = ring(&[("k2", 2)]);
        let check = evaluate(Some(&k2), &facts(stored.clone(), &["k1", "k2"]));
        assert_eq!(
            check.mismatches,
            [KeyMismatch::MissingKey {
                key_id: "k1".into()
            }]
        );
        assert_eq!(check.unrecorded, ["k2"]);
        // After a rewrap no row is under k1: its stored value is harmless.
        let check = evaluate(Some(&k2), &facts(stored, &["k2"]));
        assert!(check.mismatches.is_empty(), "{check:?}");
        // No ring at all: every sealed row's key is missing.
        let check = evaluate(None, &facts(Vec::new(), &["k2"]));
        assert_eq!(check.mismatches.len(), 1);
    }

    #[test]
    fn only_a_matching_check_in_record_mode_records() {
        let k1 = ring(&[("k1", 1), ("k0", 0)]);
        let empty = evaluate(Some(&k1), &KeyFacts::default());
        assert!(!empty.holds_data);
        assert_eq!(empty.unrecorded, ["k0", "k1"]);
        assert!(should_record(KeyCheckMode::Record, &empty));
        assert!(!should_record(KeyCheckMode::Verify, &empty));
        let missing = evaluate(Some(&k1), &facts(Vec::new(), &["old"]));
        assert!(!should_record(KeyCheckMode::Record, &missing));
    }
}
