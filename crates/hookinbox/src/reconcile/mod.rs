//! Reconciliation (docs/architecture.md §7): what the state machine should have done
//! and did not, and events a provider sent that never arrived.
//!
//! One pass ([`pass::run`]) looks for internal drift in the store
//! (`hookinbox_store::drift`: leases past expiry, ACCEPTED events with
//! nothing open, delivery rows missing for a target an event was accepted
//! with) and, for every endpoint with `[endpoint.reconcile]`, lists the
//! provider's recent events ([`stripe`]) and looks for those the inbox
//! does not have. With `fix` it repairs what is safe — leases back to
//! PENDING, statuses finished, missing deliveries added, missing events
//! stored (marked as fetched) — and reports the rest: a delivery missing
//! for a target the endpoint no longer has cannot be made, so it is only
//! listed. `serve` runs a pass every `reconcile.interval` with `fix`
//! ([`task`], counted in metrics); `hookinbox reconcile` runs one on
//! demand, reporting only unless `--fix`.

pub mod pass;
pub mod report;
pub mod sources;
pub mod stripe;
pub mod task;

pub use pass::Reconciler;
pub use report::Report;
