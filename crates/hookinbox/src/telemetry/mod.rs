//! Instrumentation. Each event is a struct whose `emit()` records its
//! metrics (and, where useful, its log line) together. Names follow
//! `hookinbox_<name>_<unit>`; labels are bounded (configured endpoint and
//! target names, the closed set of reasons and outcomes).

mod commit_events;
mod delivery_events;
mod ingress_events;
mod recorder;

pub use commit_events::{CommitFailed, CommitTimedOut};
pub use delivery_events::{DeliveryOutcome, LeasesReclaimed};
pub use ingress_events::{IngressOutcome, SecretVersionMatched};
pub use recorder::{install, MetricsHandle};
