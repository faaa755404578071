//! Counts for operators (`hookinbox stats`).

use std::collections::BTreeMap;

use serde::Serialize;

/// Inbox rows by endpoint and status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Stats {
    pub total: u64,
    /// status → count, over all endpoints.
    pub by_status: BTreeMap<String, u64>,
    /// endpoint → status → count.
    pub by_endpoint: BTreeMap<String, BTreeMap<String, u64>>,
    /// Bytes on disk, where the backend can tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskUsage>,
}

/// What an embedded store occupies on disk.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DiskUsage {
    /// The database file with its WAL.
    pub database_bytes: u64,
    /// The payload log: raw bodies, all segments.
    pub payload_log_bytes: u64,
    pub payload_segments: u64,
}

impl Stats {
    /// Adds one (endpoint, status, count) group.
    pub fn add(&mut self, endpoint: &str, status: &str, count: u64) {
        self.total += count;
        *self.by_status.entry(status.to_owned()).or_default() += count;
        *self
            .by_endpoint
            .entry(endpoint.to_owned())
            .or_default()
            .entry(status.to_owned())
            .or_default() += count;
    }
}
