//! The numbers of the dashboard's overview: is anything arriving, what is
//! waiting, what failed in the last 24 hours — by endpoint and by target.
//!
//! A page that operators keep open and reload must not count the whole
//! inbox each time. So every count here is a range of one index (recent
//! receipts, one endpoint's FAILED rows, one target's PENDING rows) and
//! stops at [`OVERVIEW_COUNT_CAP`]: a count that reaches it reads "at
//! least" (`capped`). Which endpoints and targets to count is the caller's
//! (the configured ones): finding them in the tables would be a scan.

use serde::Serialize;

/// Where every overview count stops.
pub const OVERVIEW_COUNT_CAP: u64 = 100_000;

/// The window of the per-endpoint and per-target numbers.
pub const OVERVIEW_WINDOW_MS: i64 = 24 * 60 * 60 * 1000;

/// The window of the arrival rate.
pub const RATE_WINDOW_MS: i64 = 60 * 1000;

/// What to count, at `now_ms`.
#[derive(Debug, Clone, Default)]
pub struct OverviewQuery {
    pub now_ms: i64,
    pub endpoints: Vec<String>,
    /// (endpoint id, target name)
    pub targets: Vec<(String, String)>,
}

/// A count that stops at [`OVERVIEW_COUNT_CAP`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CappedCount {
    pub count: u64,
    /// `count` reached the cap: there are at least that many.
    pub capped: bool,
}

impl CappedCount {
    /// From a count taken with `LIMIT cap`.
    pub fn of(count: i64) -> CappedCount {
        let count = u64::try_from(count).unwrap_or(0);
        CappedCount {
            count,
            capped: count >= OVERVIEW_COUNT_CAP,
        }
    }
}

/// The overview at `now_ms`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Overview {
    pub now_ms: i64,
    /// Events received in the [`RATE_WINDOW_MS`] before `now_ms`, all endpoints.
    pub received_last_minute: CappedCount,
    pub endpoints: Vec<EndpointOverview>,
    pub targets: Vec<TargetOverview>,
}

/// One endpoint over the last 24 hours.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EndpointOverview {
    pub endpoint_id: String,
    pub received_24h: CappedCount,
    /// Received in the last 24 hours and FAILED now.
    pub failed_24h: CappedCount,
    /// The newest event's receipt time, whenever it was.
    pub last_received_at_ms: Option<i64>,
}

/// One target: its backlog now, and its failures over the last 24 hours.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TargetOverview {
    pub endpoint_id: String,
    pub target: String,
    /// Deliveries waiting for their next attempt.
    pub pending: CappedCount,
    /// Deliveries being attempted now.
    pub leased: CappedCount,
    /// When the oldest PENDING delivery became due (it may be in the future:
    /// a retry waiting for its backoff).
    pub oldest_due_at_ms: Option<i64>,
    /// Events received in the last 24 hours, FAILED now, with a DEAD
    /// delivery to this target.
    pub failed_24h: CappedCount,
}
