//! Retention (docs/architecture.md §4): what `purge_batch` and `purge_preview` (on
//! either store) remove, and what they report.
//!
//! Three rules, each off when its duration is `None`, each measured back
//! from the `now_ms` the caller passes:
//!
//! - **Raw payload** (`raw_payload`): an event received before the cutoff
//!   loses its body and its audit headers; its row (metadata, fingerprint,
//!   deliveries) stays, so it is still listed, shown and deduplicated.
//!   `load_event` then has no payload. On SQLite a payload segment is
//!   deleted once no row references it.
//! - **Dedup records** (`dedup`): an event received before the cutoff is
//!   deleted whole, with its deliveries and their attempts. A copy of it
//!   arriving later is then a new event, so this must be at least the
//!   longest redelivery window of the endpoints' providers.
//! - **Dead deliveries** (`dead_deliveries`): a delivery that went DEAD
//!   before the cutoff is deleted with its attempts. Its event stays
//!   FAILED, and a replay then finds no delivery of it to copy.
//!
//! Never while a delivery is pending: an event with a delivery PENDING or
//! LEASED keeps its body and its row whatever its age, because a worker is
//! about to need them. The rules apply to it once those deliveries are done.

use std::time::Duration;

/// How long each kind of data is kept; `None` keeps it for ever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// Bodies and audit headers, by the event's `received_at_ms`.
    pub raw_payload: Option<Duration>,
    /// Whole events (the record duplicates are found by), by
    /// `received_at_ms`.
    pub dedup: Option<Duration>,
    /// DEAD deliveries, by when they died.
    pub dead_deliveries: Option<Duration>,
}

impl RetentionPolicy {
    /// The instant before which `keep` has passed, at `now_ms`; `None`
    /// when the rule is off.
    pub(crate) fn cutoff_ms(keep: Option<Duration>, now_ms: i64) -> Option<i64> {
        keep.map(|keep| {
            let keep_ms = i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
            now_ms.saturating_sub(keep_ms)
        })
    }
}

/// How much there is to purge, rule by rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgeCounts {
    /// Events whose body and audit headers are due to be dropped.
    pub raw_payloads: u64,
    /// Events due to be deleted whole.
    pub events: u64,
    /// DEAD deliveries due to be deleted.
    pub dead_deliveries: u64,
}

impl PurgeCounts {
    pub fn is_empty(&self) -> bool {
        *self == PurgeCounts::default()
    }
}

/// What one `purge_batch` did, and what is left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgeProgress {
    /// Purged by this batch: at most the batch's limit per rule.
    pub purged: PurgeCounts,
    /// Still due after it, each rule counted up to the batch's limit
    /// (`purge_preview` counts all): zero means that rule is done. A full
    /// count after every batch would read the whole backlog each time.
    pub remaining: PurgeCounts,
    /// Payload segments deleted because no row references them any more
    /// (SQLite; always 0 on PostgreSQL).
    pub segments_deleted: u64,
}

impl PurgeProgress {
    /// Nothing is left to purge.
    pub fn is_done(&self) -> bool {
        self.remaining.is_empty()
    }
}
