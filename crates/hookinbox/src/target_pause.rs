//! Pausing and resuming a target (docs/delivery.md, "Flow control"): one
//! function for `hookinbox targets pause|resume`, the admin API and the
//! dashboard, so each checks the target the same way and each change is
//! logged the same way — one audit line naming the target and who asked.
//! The pause itself is a row in the database (`target_gate`), honoured by
//! every `serve` and `work` process at its next lease.

use hookinbox_store::{StoreError, TargetGates};

use crate::telemetry::TargetPauseChanged;

/// What the operator asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseAction {
    Pause,
    Resume,
}

impl PauseAction {
    /// `pause` or `resume`, as the routes and the log line spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            PauseAction::Pause => "pause",
            PauseAction::Resume => "resume",
        }
    }

    /// `paused` or `resumed`.
    pub fn done(self) -> &'static str {
        match self {
            PauseAction::Pause => "paused",
            PauseAction::Resume => "resumed",
        }
    }
}

/// Where the request came from, for the audit line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requester {
    /// `hookinbox targets pause|resume`.
    Cli,
    /// `POST /admin/targets/{endpoint}/{target}/pause|resume`.
    AdminApi,
    /// The dashboard's button on an endpoint's page.
    Dashboard,
}

impl Requester {
    pub fn as_str(self) -> &'static str {
        match self {
            Requester::Cli => "cli",
            Requester::AdminApi => "admin_api",
            Requester::Dashboard => "dashboard",
        }
    }
}

/// Why a pause or a resume was not done.
#[derive(Debug, thiserror::Error)]
pub enum TargetPauseError {
    /// Not a target of the running configuration: a typo must not pause
    /// a target nobody delivers to.
    #[error("no target `{target}` on endpoint `{endpoint}` in the configuration")]
    NotConfigured { endpoint: String, target: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One pause or resume of a configured target.
pub struct TargetPause<'a> {
    pub endpoint: &'a str,
    pub target: &'a str,
    pub action: PauseAction,
    pub requester: Requester,
}

impl TargetPause<'_> {
    /// Checks the target against `configured` (endpoint, target) pairs,
    /// then pauses or resumes it; `true` when that changed its state
    /// (`false`: it was already paused, or was not paused). A change is
    /// logged once, at INFO.
    pub async fn apply(
        &self,
        configured: &[(String, String)],
        gates: &dyn TargetGates,
        now_ms: i64,
    ) -> Result<bool, TargetPauseError> {
        let known = configured
            .iter()
            .any(|(endpoint, target)| endpoint == self.endpoint && target == self.target);
        if !known {
            return Err(TargetPauseError::NotConfigured {
                endpoint: self.endpoint.to_owned(),
                target: self.target.to_owned(),
            });
        }
        let changed = match self.action {
            PauseAction::Pause => gates.pause(self.endpoint, self.target, now_ms).await?,
            PauseAction::Resume => gates.resume(self.endpoint, self.target, now_ms).await?,
        };
        if changed {
            TargetPauseChanged {
                endpoint: self.endpoint,
                target: self.target,
                action: self.action,
                requester: self.requester,
            }
            .emit();
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use hookinbox_store::{SqliteOptions, SqliteStore, StoreReads};

    use super::*;
    use crate::telemetry::captured_log::capture;

    fn configured() -> Vec<(String, String)> {
        vec![("lab".to_owned(), "erp".to_owned())]
    }

    #[test]
    fn each_change_logs_one_audit_line_and_a_refusal_or_no_change_none() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(SqliteOptions::new(dir.path().join("inbox.db"))).unwrap();
        let reads = store.open_reader().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let run = |endpoint: &str, target: &str, action: PauseAction, requester: Requester| {
            let mut outcome = None;
            let log = capture(|| {
                outcome = Some(
                    runtime.block_on(
                        TargetPause {
                            endpoint,
                            target,
                            action,
                            requester,
                        }
                        .apply(&configured(), &store, 1_000),
                    ),
                );
            });
            (outcome.expect("ran"), log)
        };

        let (paused, log) = run("lab", "erp", PauseAction::Pause, Requester::AdminApi);
        assert!(paused.unwrap(), "it changed");
        assert_eq!(log.lines().count(), 1, "{log}");
        assert!(
            log.contains("INFO")
                && log.contains("Target paused by an operator.")
                && log.contains("endpoint=\"lab\"")
                && log.contains("target=\"erp\"")
                && log.contains("action=\"pause\"")
                && log.contains("via=\"admin_api\""),
            "{log}"
        );
        let (again, log) = run("lab", "erp", PauseAction::Pause, Requester::Cli);
        assert!(!again.unwrap(), "already paused");
        assert_eq!(log, "", "no change, no audit line");

        let (unknown, log) = run("lab", "crm", PauseAction::Pause, Requester::Dashboard);
        assert!(
            matches!(unknown, Err(TargetPauseError::NotConfigured { .. })),
            "{unknown:?}"
        );
        assert_eq!(log, "");
        let gates = runtime.block_on(reads.target_gates()).unwrap();
        assert_eq!(gates.len(), 1, "only the configured target has a gate row");
        assert_eq!(gates[0].target, "erp");

        let (resumed, log) = run("lab", "erp", PauseAction::Resume, Requester::Dashboard);
        assert!(resumed.unwrap());
        assert!(
            log.contains("Target resumed by an operator.") && log.contains("via=\"dashboard\""),
            "{log}"
        );
        let gates = runtime.block_on(reads.target_gates()).unwrap();
        assert_eq!(gates[0].state.paused_at_ms, None);
    }
}
