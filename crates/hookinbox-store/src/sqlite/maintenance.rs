//! [`Maintenance`] on the Sqlite store: its own methods (purge, rewrap,
//! key check) behind the trait `retention` and the `keys` commands call.

use async_trait::async_trait;

use super::SqliteStore;
use crate::{
    KeyCheck, KeyCheckMode, Maintenance, PurgeCounts, PurgeProgress, RetentionPolicy,
    RewrapProgress, StoreError,
};

#[async_trait]
impl Maintenance for SqliteStore {
    async fn purge_batch(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
        limit: usize,
    ) -> Result<PurgeProgress, StoreError> {
        SqliteStore::purge_batch(self, policy, now_ms, limit).await
    }

    async fn purge_preview(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
    ) -> Result<PurgeCounts, StoreError> {
        SqliteStore::purge_preview(self, policy, now_ms).await
    }

    async fn rewrap_batch(&self, limit: usize) -> Result<RewrapProgress, StoreError> {
        SqliteStore::rewrap_batch(self, limit).await
    }

    async fn check_keys(&self, mode: KeyCheckMode) -> Result<KeyCheck, StoreError> {
        SqliteStore::check_keys(self, mode).await
    }
}
