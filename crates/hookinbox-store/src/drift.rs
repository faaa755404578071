//! Internal drift (docs/architecture.md §7, reconciliation): rows whose state the
//! state machine should have moved and did not. Found with
//! [`crate::Reconciliation::find_drift`] (reads only), repaired with
//! [`crate::Reconciliation::repair_drift`], whose every statement is guarded by the
//! condition that made the row drift, so a row that moved on meanwhile is
//! left alone.
//!
//! Three kinds:
//! - **Expired leases**: LEASED past `lease_until_ms` by more than the
//!   caller's grace — the lease rescuer of a running worker takes these
//!   within its interval, so finding one means none runs. Repair: back to
//!   PENDING, as the rescuer does.
//! - **Stale statuses**: an ACCEPTED event none of whose deliveries is
//!   PENDING or LEASED — every one is terminal, yet the event was not
//!   finished — or one with no delivery row and no targets (a row from
//!   before events without targets were stored PROCESSED). Repair: FAILED
//!   when its latest generation has a DEAD delivery, else PROCESSED, as
//!   settling would have done.
//! - **Missing deliveries**: an event lacks a delivery row (of any
//!   generation) for a target it *should have*: one of the targets recorded
//!   with it when it was accepted (`inbox.targets`). A target added to the
//!   endpoint later is not one: old events never get it behind the
//!   operator's back. Rows from before targets were recorded are not checked.
//!   Repair: a PENDING delivery for it (same inbox id, so the same
//!   idempotency key), and the event ACCEPTED again until it is done. The
//!   caller decides which to repair: one whose target is no longer
//!   configured cannot be delivered, and is only reported.

/// What one search for drift looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriftQuery {
    /// Leases that expired before this instant (unix ms) count as stuck.
    pub expired_before_ms: i64,
    /// Events accepted at or after this instant (unix ms, by their inbox
    /// id, which is a UUIDv7) are checked for missing deliveries; the
    /// other kinds are looked for whatever their age.
    pub accepted_since_ms: i64,
    /// Most items of each kind returned by one search.
    pub limit: usize,
}

/// What a search found, each kind oldest first, at most `limit` of each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drift {
    /// Delivery ids leased past expiry.
    pub expired_leases: Vec<i64>,
    /// Inbox ids of ACCEPTED events with nothing open.
    pub stale_statuses: Vec<String>,
    pub missing_deliveries: Vec<MissingDelivery>,
}

impl Drift {
    pub fn is_empty(&self) -> bool {
        self.expired_leases.is_empty()
            && self.stale_statuses.is_empty()
            && self.missing_deliveries.is_empty()
    }
}

/// A target an event was accepted with and has no delivery row for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MissingDelivery {
    pub inbox_id: String,
    pub endpoint_id: String,
    pub target: String,
}

/// What to repair: items a search found (or a subset of them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriftRepair {
    /// The `expired_before_ms` of the search: a lease is only taken back
    /// while it is still expired by then.
    pub expired_before_ms: i64,
    pub expired_leases: Vec<i64>,
    pub stale_statuses: Vec<String>,
    pub missing_deliveries: Vec<MissingDelivery>,
    /// When the repair runs: a new delivery is due from then.
    pub now_ms: i64,
}

/// How many items a repair changed, kind by kind (an item that moved on
/// since it was found is not counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Repaired {
    pub expired_leases: u64,
    pub stale_statuses: u64,
    pub missing_deliveries: u64,
}

/// The smallest UUIDv7 (as text) of an instant: every inbox id generated
/// at or after `unix_ms` sorts at or after it, so `id >= floor` selects by
/// acceptance time through the primary key.
pub(crate) fn uuid_v7_floor(unix_ms: i64) -> String {
    let ms = u64::try_from(unix_ms.max(0)).unwrap_or(0) & 0xffff_ffff_ffff;
    format!(
        "{:08x}-{:04x}-7000-0000-000000000000",
        ms >> 16,
        ms & 0xffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_sorts_before_ids_of_its_millisecond_and_after_earlier_ones() {
        let at = 1_700_000_000_123_i64;
        let ts = |ms: i64| {
            uuid::Timestamp::from_unix(
                uuid::NoContext,
                (ms / 1000) as u64,
                ((ms % 1000) * 1_000_000) as u32,
            )
        };
        let same = uuid::Uuid::new_v7(ts(at)).to_string();
        let before = uuid::Uuid::new_v7(ts(at - 1)).to_string();
        let floor = uuid_v7_floor(at);
        assert!(floor.as_str() <= same.as_str(), "{floor} {same}");
        assert!(before.as_str() < floor.as_str(), "{before} {floor}");
    }
}
