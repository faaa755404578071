//! Secrets a provider handed over during a handshake (Asana's
//! `X-Hook-Secret`, Notion's verification token), kept so that the events
//! signed with them can be verified. A capability of its own, as
//! [`crate::TargetGates`] is; both backends have it.
//!
//! Each secret is one row (`learned_secret`): several webhooks may share one
//! URL (Asana), each with its secret. It is sealed with the at-rest key ring
//! like a payload, its identity (the associated data) being its endpoint and
//! the SHA-256 fingerprint of the secret, so a sealed secret copied to
//! another endpoint does not open. The fingerprint finds a repeated
//! handover of the same secret; a provider's secret is random (Asana: 32
//! bytes, Notion: a 43-character token), so its digest tells nothing of it.
//! Without a key ring a secret is not kept: it is never stored in clear.

use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};
use sha2::Digest;

use crate::sealed::{self, RecordKind, Sealed};
use crate::{EncryptionKeys, StoreError};

/// The most secrets one endpoint keeps: a bound on what handovers can
/// add, far above the webhooks one URL serves.
pub const MAX_LEARNED_PER_ENDPOINT: i64 = 16;

/// One learned secret, opened.
pub struct LearnedSecret {
    /// 1, 2, … per endpoint: the secret's version is `learned-{number}`.
    pub number: i64,
    pub learned_at_ms: i64,
    /// Hex SHA-256 of the secret.
    pub fingerprint: String,
    pub secret: SecretString,
}

impl std::fmt::Debug for LearnedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LearnedSecret")
            .field("number", &self.number)
            .field("learned_at_ms", &self.learned_at_ms)
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

/// What [`LearnedSecrets::learn`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learned {
    /// Kept as this number.
    New(i64),
    /// The endpoint had it already, as this number (a repeated handover).
    Known(i64),
    /// The endpoint holds [`MAX_LEARNED_PER_ENDPOINT`] secrets: not kept.
    Full,
}

#[async_trait]
pub trait LearnedSecrets: Send + Sync {
    /// Seals and keeps `secret` for `endpoint_id`, learned at `now_ms`.
    async fn learn(
        &self,
        endpoint_id: &str,
        secret: &SecretString,
        now_ms: i64,
    ) -> Result<Learned, StoreError>;

    /// Every secret learned for `endpoint_id`, opened, by number.
    async fn learned(&self, endpoint_id: &str) -> Result<Vec<LearnedSecret>, StoreError>;
}

/// Hex SHA-256 of a secret.
pub(crate) fn fingerprint(secret: &SecretString) -> String {
    sha2::Sha256::digest(secret.expose_secret().as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The sealed record's identity: endpoint and fingerprint.
fn record_id(endpoint_id: &str, fingerprint: &str) -> String {
    format!("{endpoint_id}\0{fingerprint}")
}

/// Seals `secret` for `endpoint_id` under the active key.
pub(crate) fn seal(
    keys: Option<&EncryptionKeys>,
    endpoint_id: &str,
    fingerprint: &str,
    secret: &SecretString,
) -> Result<Sealed, StoreError> {
    let keys = keys.ok_or_else(|| {
        StoreError::unavailable("a handed-over secret is kept only under an encryption key")
    })?;
    sealed::seal(
        keys,
        RecordKind::LearnedSecret,
        &record_id(endpoint_id, fingerprint),
        secret.expose_secret().as_bytes(),
    )
}

/// Opens one stored row.
pub(crate) fn open(
    keys: Option<&EncryptionKeys>,
    endpoint_id: &str,
    row: StoredRow,
) -> Result<LearnedSecret, StoreError> {
    let plaintext = zeroize::Zeroizing::new(sealed::open(
        keys,
        &row.key_id,
        RecordKind::LearnedSecret,
        &record_id(endpoint_id, &row.fingerprint),
        &row.sealed,
    )?);
    let secret = std::str::from_utf8(&plaintext).map_err(|_| {
        StoreError::Corrupt(format!(
            "learned secret {} of endpoint {endpoint_id} is not UTF-8",
            row.number
        ))
    })?;
    Ok(LearnedSecret {
        number: row.number,
        learned_at_ms: row.learned_at_ms,
        fingerprint: row.fingerprint,
        secret: SecretString::from(secret.to_owned()),
    })
}

/// One `learned_secret` row as read, still sealed.
pub(crate) struct StoredRow {
    pub(crate) number: i64,
    pub(crate) learned_at_ms: i64,
    pub(crate) fingerprint: String,
    pub(crate) key_id: String,
    pub(crate) sealed: Vec<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> EncryptionKeys {
        EncryptionKeys::new("k1", secrecy::SecretBox::new(Box::new([7; 32]))).unwrap()
    }

    #[test]
    fn a_sealed_secret_opens_only_for_its_endpoint() {
        let keys = keys();
        let secret = SecretString::from("b537207f20cbfa02357cf448134da559".to_owned());
        let print = fingerprint(&secret);
        let sealed = seal(Some(&keys), "asana", &print, &secret).unwrap();
        assert!(
            !sealed.bytes.windows(8).any(|w| w == b"b537207f"),
            "sealed bytes hold the secret"
        );
        let row = |sealed: &Sealed| StoredRow {
            number: 1,
            learned_at_ms: 5,
            fingerprint: print.clone(),
            key_id: sealed.key_id.clone(),
            sealed: sealed.bytes.clone(),
        };
        let opened = open(Some(&keys), "asana", row(&sealed)).unwrap();
        assert_eq!(opened.secret.expose_secret(), secret.expose_secret());
        assert!(!format!("{opened:?}").contains("b537207f"));
        assert!(matches!(
            open(Some(&keys), "other", row(&sealed)),
            Err(StoreError::Corrupt(_))
        ));
        assert!(seal(None, "asana", &print, &secret).is_err());
    }
}
