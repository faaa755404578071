//! The outbox: one delivery row per (event, target), inserted in the same
//! transaction as the inbox row, moved by workers through leases.

/// The state of a delivery row. Every transition is a guarded UPDATE
/// (`… WHERE status = 'LEASED' AND lease_owner = ?`), so a worker whose lease
/// was reclaimed cannot overwrite the newer owner's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeliveryStatus {
    /// Waiting for `next_attempt_at`. A worker's lease moves it to `Leased`.
    Pending,
    /// A worker holds it until `lease_until`. The worker moves it to
    /// `Delivered`, back to `Pending` (retry) or to `Dead`; the lease rescuer
    /// moves it back to `Pending` when the lease expires (crashed worker).
    Leased,
    /// The target accepted it. Terminal.
    Delivered,
    /// Its object version was not newer than the last one delivered to this
    /// target: a processed no-op. Terminal.
    SkippedStale,
    /// The retry budget is spent. Terminal until an operator replays the event
    /// (which adds a new delivery row).
    Dead,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "PENDING",
            DeliveryStatus::Leased => "LEASED",
            DeliveryStatus::Delivered => "DELIVERED",
            DeliveryStatus::SkippedStale => "SKIPPED_STALE",
            DeliveryStatus::Dead => "DEAD",
        }
    }

    pub fn parse(text: &str) -> Option<DeliveryStatus> {
        match text {
            "PENDING" => Some(DeliveryStatus::Pending),
            "LEASED" => Some(DeliveryStatus::Leased),
            "DELIVERED" => Some(DeliveryStatus::Delivered),
            "SKIPPED_STALE" => Some(DeliveryStatus::SkippedStale),
            "DEAD" => Some(DeliveryStatus::Dead),
            _ => None,
        }
    }
}

/// What to lease.
#[derive(Debug, Clone)]
pub struct LeaseParams {
    pub endpoint_id: String,
    pub target: String,
    /// Identifies this worker; the lease is only honoured for this owner.
    pub owner: String,
    pub max: usize,
    pub now_ms: i64,
    pub lease_ms: i64,
    /// The target's rate limit and circuit breaker: how many the lease may
    /// take (a pause is honoured whatever this says; see `target_gate`).
    pub gate: crate::GatePolicy,
}

/// A delivery this worker now holds. `inbox_id` is the idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeasedDelivery {
    pub delivery_id: i64,
    pub inbox_id: String,
    pub endpoint_id: String,
    pub target: String,
    pub owner: String,
    /// Attempts made before this one.
    pub attempts: u32,
    /// When the delivery row was created (first attempt's budget starts here).
    pub created_at_ms: i64,
    pub lease_until_ms: i64,
    /// It belongs to an ordered object: settling it may let the object's
    /// next version go, so the worker looks for due deliveries again.
    pub ordered: bool,
}

/// A leased delivery with the event it delivers, as
/// [`crate::Store::lease_events`] hands them to a worker: read in the
/// lease's own round trip where the backend can (PostgreSQL), so a worker
/// does not go back to the database once per delivery for its event.
#[derive(Debug)]
pub struct LeasedEvent {
    pub lease: LeasedDelivery,
    /// The event behind the lease, as [`crate::Store::load_event`] reads
    /// it: `Ok(None)` when the inbox row is missing, `Err` when it could not
    /// be read (a body that fails its fingerprint, a key not in the ring).
    /// Only this delivery's attempt fails then; the lease is held either
    /// way.
    pub event: Result<Option<crate::StoredEvent>, crate::StoreError>,
}

/// How a leased delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    /// The target accepted it.
    Delivered,
    /// Try again at `next_attempt_at_ms`; `error` is already masked.
    Retry {
        next_attempt_at_ms: i64,
        error: String,
    },
    /// Give up; `error` is already masked.
    Dead { error: String },
    /// Done without sending: the target's transform answered `cancel:
    /// true`. Recorded as DELIVERED (terminal, ordering advances) with
    /// `note` as the delivery's `last_error` and its attempt's error, so
    /// operators see that nothing was sent.
    Cancelled { note: String },
    /// Not attempted: the event could not be read from this service's own
    /// storage (a body that did not read, open or match its fingerprint).
    /// Back to PENDING at `next_attempt_at_ms` with its attempts as they
    /// were and no attempt recorded: a storage fault is never charged to
    /// the target's retry budget (docs/architecture.md §5). `error` says
    /// what failed, without the bytes or a key.
    Deferred {
        next_attempt_at_ms: i64,
        error: String,
    },
}

/// One attempt's outcome to record with [`crate::Store::settle_many`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettleRequest {
    pub lease: LeasedDelivery,
    pub settlement: Settlement,
    /// When the attempt ended (a DELIVERED row's `delivered_at_ms`).
    pub now_ms: i64,
}

/// Which events to replay.
#[derive(Debug, Clone)]
pub enum ReplaySelector {
    One {
        inbox_id: String,
    },
    /// Every FAILED event received at or after `since_ms` (all when `None`).
    Failed {
        since_ms: Option<i64>,
    },
    /// These events, in one transaction: a page of a filtered replay
    /// (the admin API, `events replay` with filters). Ids that name no
    /// event, or an event with a delivery in flight, are left out of the
    /// answer.
    Ids {
        inbox_ids: Vec<String>,
    },
    /// These events, in one transaction, each to the targets routing chose
    /// for it now rather than those of its last delivery, its routed and
    /// not-routed record replaced (`hookinbox events replay`, the admin API
    /// and the dashboard). An event with a delivery in flight, or nothing
    /// to deliver to, is left alone and out of the answer.
    Routed {
        routes: Vec<crate::ReplayRoute>,
    },
}
