//! The storage seam of hookinbox (docs/architecture.md §4).
//!
//! [`Store`] (and its operator-read sibling [`StoreReads`]) is the only way
//! the service touches its database, and this crate is the only place SQL
//! lives. The SQLite implementation ([`SqliteStore`]) is the embedded
//! default: one writer thread owns the write connection and commits many
//! waiting requests in one transaction (group commit), answering each only
//! after that commit returned. The PostgreSQL implementation
//! ([`PostgresStore`]) serves many processes on many machines: each process
//! batches its accepts into one transaction, and all coordination between
//! processes is in the database.
//!
//! [`open`] is the one place a storage URL ([`StorageUrl`]) and
//! [`StoreOptions`] become an opened backend ([`AnyStore`]).
//!
//! At rest, both can seal raw bodies and audit headers under a key ring
//! ([`EncryptionKeys`], sealing in `sealed`; `None` keeps them plain),
//! re-seal old records under a new key (`rewrap_batch`), check a ring
//! against the database before serving ([`key_check`]), and purge by age
//! ([`RetentionPolicy`], `purge_batch`), all through [`Maintenance`].
//! SQLite's files are private to the user the store runs as.

mod any_reader;
mod any_store;
pub mod backlog;
mod backlog_counts;
pub mod delivery;
pub mod delivery_wakeups;
pub mod drift;
pub mod encryption_keys;
pub mod error;
mod event_query;
pub mod event_stream;
pub mod event_view;
pub mod handler;
pub mod inbox;
pub mod key_check;
pub mod learned_secrets;
mod maintenance;
mod open;
pub mod overview;
pub mod postgres;
mod prepared_event;
mod reconciliation;
pub mod replay_route;
pub mod retention;
pub mod rewrap_progress;
mod sealed;
pub mod sqlite;
pub mod stats;
pub mod storage_url;
pub mod store;
mod store_options;
pub mod store_reads;
mod stored_body;
pub mod target_gate;
mod target_gates;
mod xchacha20_poly1305;

pub use any_reader::AnyReader;
pub use any_store::AnyStore;
pub use backlog::{Backlog, TargetBacklog, TargetRef};
pub use backlog_counts::BacklogCounts;
pub use delivery::{
    DeliveryStatus, LeaseParams, LeasedDelivery, LeasedEvent, ReplaySelector, SettleRequest,
    Settlement,
};
pub use delivery_wakeups::DeliveryWakeups;
pub use drift::{Drift, DriftQuery, DriftRepair, MissingDelivery, Repaired};
pub use encryption_keys::{EncryptionKeys, EncryptionKeysError};
pub use error::{BoxError, StoreError};
pub use event_stream::{StreamCursor, StreamedEvent};
pub use event_view::{
    AttemptView, DeliveryView, EventCursor, EventDetail, EventFilter, EventPage, EventSummary,
};
pub use handler::{HandledEvent, HandlerDelivery, HandlerError, PostgresHandler, SqliteHandler};
pub use inbox::{AcceptOutcome, Fingerprint, InboxStatus, NewEvent, StoredEvent, UnsignedMetadata};
pub use key_check::{KeyCheck, KeyCheckMode, KeyMismatch, KeyRingMismatch};
pub use learned_secrets::{Learned, LearnedSecret, LearnedSecrets};
pub use maintenance::Maintenance;
pub use open::{migrate, open, open_reader};
pub use overview::{
    CappedCount, EndpointOverview, Overview, OverviewQuery, TargetOverview, OVERVIEW_COUNT_CAP,
};
pub use postgres::{PostgresOptions, PostgresReader, PostgresStore, PostgresUrl};
pub use reconciliation::Reconciliation;
pub use replay_route::ReplayRoute;
pub use retention::{PurgeCounts, PurgeProgress, RetentionPolicy};
pub use rewrap_progress::RewrapProgress;
pub use sqlite::{SqliteOptions, SqliteReader, SqliteStore};
pub use stats::{DiskUsage, Stats};
pub use storage_url::StorageUrl;
pub use store::Store;
pub use store_options::StoreOptions;
pub use store_reads::StoreReads;
pub use target_gate::{
    AttemptVerdict, CircuitBreaker, CircuitState, CircuitTransition, GatePolicy, GateState,
    RateLimit, TargetGateView, TargetState,
};
pub use target_gates::TargetGates;

/// The backend crates whose types a library handler receives (its open
/// transaction), re-exported so an embedder uses the same versions.
pub use {rusqlite, tokio_postgres};
