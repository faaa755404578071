//! The audit line of an operator's pause or resume of a target: which
//! target, which way, and through what (`cli`, `admin_api`, `dashboard`).
//! The state itself is in `hookinbox_target_state`.

use crate::target_pause::{PauseAction, Requester};

/// A target paused or resumed by an operator.
pub struct TargetPauseChanged<'a> {
    pub endpoint: &'a str,
    pub target: &'a str,
    pub action: PauseAction,
    pub requester: Requester,
}

impl TargetPauseChanged<'_> {
    pub fn emit(self) {
        let message = match self.action {
            PauseAction::Pause => "Target paused by an operator.",
            PauseAction::Resume => "Target resumed by an operator.",
        };
        tracing::info!(
            message = message,
            endpoint = self.endpoint,
            target = self.target,
            action = self.action.as_str(),
            via = self.requester.as_str()
        );
    }
}
