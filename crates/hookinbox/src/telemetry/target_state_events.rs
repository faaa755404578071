//! `hookinbox_target_state{endpoint,target}`: each configured target's
//! gate as a number (0 closed, 1 open, 2 half_open, 3 paused;
//! docs/operations.md), sampled from the database by `serve`, so it shows
//! what every process honours. Labels are the configured names: bounded.

use crate::delivery::target_states::TargetStates;

/// One reading of every configured target's state.
pub struct TargetStatesSampled<'a> {
    pub states: &'a TargetStates,
}

impl TargetStatesSampled<'_> {
    pub fn emit(self) {
        for row in &self.states.rows {
            metrics::gauge!(
                "hookinbox_target_state",
                "endpoint" => row.endpoint.clone(),
                "target" => row.target.clone()
            )
            .set(row.gauge as f64);
        }
    }
}
