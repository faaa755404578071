//! Instrumentation. Each event is a struct whose `emit()` records its
//! metrics (and, where useful, its log line) together. Accepted events and
//! delivery outcomes log one line each at INFO; trouble is logged at WARN
//! and above. Names follow `hookinbox_<name>_<unit>`; labels are bounded
//! (configured endpoint and target names, the closed set of reasons and
//! outcomes).

mod backlog_events;
mod build_info;
#[cfg(test)]
pub(crate) mod captured_log;
mod commit_events;
mod delivery_events;
mod end_to_end_events;
mod endpoint_metrics;
mod ingress_events;
mod initial_series;
mod key_reload_events;
pub mod log_writer;
mod purge_events;
mod readiness_events;
mod reconcile_events;
mod recorder;
mod secret_events;
mod target_pause_events;
mod target_state_events;

pub use backlog_events::{BacklogSampled, InboxRowsCounted};
pub use build_info::BuildInfo;
pub use commit_events::{CommitFailed, CommitQueueDepth, CommitTimedOut};
pub use delivery_events::{DeliveryOutcome, LeasesReclaimed};
pub use end_to_end_events::DeliveredEndToEnd;
pub use endpoint_metrics::EndpointMetrics;
pub use ingress_events::{AcceptedEvent, IngressOutcome, SecretVersionMatched};
pub use initial_series::InitialSeries;
pub use key_reload_events::SecretReloadFailed;
pub use log_writer::LogLinesDropped;
pub use purge_events::Purged;
pub use readiness_events::ReadinessChecked;
pub use reconcile_events::{ReconcileCounts, ReconcileFailed, Reconciled};
pub use recorder::{install, MetricsHandle};
pub use secret_events::SecretVersionsInUse;
pub use target_pause_events::TargetPauseChanged;
pub use target_state_events::TargetStatesSampled;
