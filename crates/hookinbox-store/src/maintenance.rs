//! The maintenance a store does besides serving (docs/architecture.md §4,
//! §6): purging by age, resealing under a new key, and checking a key ring
//! against the database. On the same seam as the hot path, as River's
//! driver has `JobDeleteBefore`, so `retention` and the `keys` commands
//! never ask which database they run on.

use async_trait::async_trait;

use crate::{
    KeyCheck, KeyCheckMode, PurgeCounts, PurgeProgress, RetentionPolicy, RewrapProgress, StoreError,
};

/// What the purge task, `hookinbox purge`, `keys rewrap` and the key check
/// at start-up ask of a store. Every backend implements it.
#[async_trait]
pub trait Maintenance: Send + Sync + 'static {
    /// Purges under `policy` at `now_ms`, up to `limit` items per rule, in
    /// one short transaction that skips events with a pending delivery.
    /// Loop until [`PurgeProgress::is_done`].
    async fn purge_batch(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
        limit: usize,
    ) -> Result<PurgeProgress, StoreError>;

    /// What [`Maintenance::purge_batch`] would purge now, rule by rule
    /// (`purge --dry-run`).
    async fn purge_preview(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
    ) -> Result<PurgeCounts, StoreError>;

    /// Reseals up to `limit` records that are not under the active key
    /// (plain ones included) under it, and says how many are left: loop
    /// until [`RewrapProgress::is_done`]. Without keys: `NoEncryptionKeys`.
    async fn rewrap_batch(&self, limit: usize) -> Result<RewrapProgress, StoreError>;

    /// Checks the store's key ring against the database (see
    /// [`crate::key_check`]); in [`KeyCheckMode::Record`], when everything
    /// matches, records the check values of key ids that have none.
    /// Mismatches are in the answer, not an error.
    async fn check_keys(&self, mode: KeyCheckMode) -> Result<KeyCheck, StoreError>;
}
