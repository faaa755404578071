//! Crash points for the crash tests: when `HOOKINBOX_FAILPOINT` names a
//! point, the process aborts there (no destructors, no flush — as abrupt
//! as `kill -9`). Unset in production, where each check is one load of a
//! cached value.
//!
//! The store has stall points of its own: `HOOKINBOX_FAILPOINT=stall_commit:PATH`
//! holds every COMMIT while the file `PATH` exists (the commit-deadline
//! tests), `stall_purge:PATH` a purge batch between removing its rows and
//! deleting their segments (the kill -9 during purge test); see
//! `hookinbox-store`, `sqlite/stall_point.rs`.

use std::sync::OnceLock;

/// The named places a crash test can stop the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failpoint {
    /// Ingress: the event is committed, the 2xx not yet sent.
    AfterCommitBeforeResponse,
    /// Delivery: the target accepted the event, DELIVERED not yet recorded.
    AfterTargetAcceptedBeforeSettle,
}

impl Failpoint {
    fn name(self) -> &'static str {
        match self {
            Failpoint::AfterCommitBeforeResponse => "after_commit_before_response",
            Failpoint::AfterTargetAcceptedBeforeSettle => "after_target_accepted_before_settle",
        }
    }

    /// Aborts the process if this point is armed.
    pub fn hit(self) {
        static ARMED: OnceLock<Option<String>> = OnceLock::new();
        let armed = ARMED.get_or_init(|| std::env::var("HOOKINBOX_FAILPOINT").ok());
        if armed.as_deref() == Some(self.name()) {
            eprintln!("failpoint {} hit: aborting", self.name());
            std::process::abort();
        }
    }
}
