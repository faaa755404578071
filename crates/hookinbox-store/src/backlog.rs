//! What the service's metrics sampler reads from the store: how far behind
//! delivery is. Every query behind it is an index range scan whose cost
//! follows the backlog (rows still ACCEPTED, deliveries still open), not
//! the size of the inbox, so sampling it every few seconds stays cheap with
//! millions of processed rows. Whole-inbox counts are apart
//! ([`crate::BacklogCounts::count_by_status`]), for the caller to sample less often.

use std::collections::BTreeMap;

/// The backlog of the configured endpoints and targets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Endpoint → when its oldest ACCEPTED event was received (unix ms).
    /// An endpoint with nothing unprocessed is absent.
    pub oldest_unprocessed_ms: BTreeMap<String, i64>,
    /// One entry per (endpoint, target) asked for, in the order asked.
    pub targets: Vec<TargetBacklog>,
}

/// How far behind one target is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetBacklog {
    pub endpoint_id: String,
    pub target: String,
    /// Deliveries PENDING or LEASED.
    pub open: u64,
    /// The earliest `next_attempt_at_ms` of its PENDING deliveries (it is
    /// due when that is in the past); `None` when none is pending.
    pub earliest_due_ms: Option<i64>,
}

/// A configured (endpoint, target) pair to sample.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TargetRef {
    pub endpoint_id: String,
    pub target: String,
}
