//! Every configured target's state as operators see it — closed, open,
//! half_open or paused — from the store's gate rows (`target_gate`) and
//! the configuration: `hookinbox targets list`, `hookinbox stats` and the
//! `hookinbox_target_state` gauge read the same answer.

use std::collections::HashMap;
use std::io::Write;

use hookinbox_store::{CircuitState, StoreError, StoreReads, TargetState};
use serde::Serialize;

use crate::config::Settings;

/// One configured target's state.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TargetStateRow {
    pub endpoint: String,
    pub target: String,
    /// `closed`, `open`, `half_open` or `paused`.
    pub state: &'static str,
    /// When it was paused (unix ms), when it is.
    pub paused_at_ms: Option<i64>,
    /// Its circuit, under a pause too: `closed`, `open`, `half_open`.
    pub circuit: &'static str,
    /// Consecutive transient failures counted by its breaker.
    pub failures: u32,
    /// Open: when the next probe may go (unix ms).
    pub open_until_ms: Option<i64>,
    #[serde(skip)]
    pub gauge: i64,
}

/// The configured targets' states, in configuration order.
#[derive(Debug, Clone)]
pub struct TargetStates {
    pub rows: Vec<TargetStateRow>,
}

impl TargetStates {
    /// Reads the gate rows and lays them over the configured targets (a
    /// gate row of a target no longer configured is left out).
    pub async fn read(
        config: &Settings,
        reads: &dyn StoreReads,
    ) -> Result<TargetStates, StoreError> {
        TargetStates::read_for(&configured_targets(config), reads).await
    }

    /// As [`TargetStates::read`], for these (endpoint, target) pairs.
    pub async fn read_for(
        configured: &[(String, String)],
        reads: &dyn StoreReads,
    ) -> Result<TargetStates, StoreError> {
        let gates: HashMap<(String, String), _> = reads
            .target_gates()
            .await?
            .into_iter()
            .map(|gate| ((gate.endpoint_id, gate.target), gate.state))
            .collect();
        let rows = configured
            .iter()
            .map(|(endpoint, target)| {
                let gate = gates
                    .get(&(endpoint.clone(), target.clone()))
                    .cloned()
                    .unwrap_or_default();
                let state = gate.target_state();
                TargetStateRow {
                    endpoint: endpoint.clone(),
                    target: target.clone(),
                    state: state.as_str(),
                    paused_at_ms: gate.paused_at_ms,
                    circuit: circuit_name(gate.circuit),
                    failures: gate.failures,
                    open_until_ms: gate
                        .open_until_ms
                        .filter(|_| gate.circuit != CircuitState::Closed),
                    gauge: state.gauge_value(),
                }
            })
            .collect();
        Ok(TargetStates { rows })
    }

    /// One line per target.
    pub fn write_table(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{:<24} {:<24} {:<10} {:>8}",
            "ENDPOINT", "TARGET", "STATE", "FAILURES"
        )?;
        for row in &self.rows {
            writeln!(
                out,
                "{:<24} {:<24} {:<10} {:>8}",
                row.endpoint, row.target, row.state, row.failures
            )?;
        }
        Ok(())
    }
}

/// Every configured (endpoint, target), in configuration order.
pub fn configured_targets(config: &Settings) -> Vec<(String, String)> {
    config
        .endpoints
        .iter()
        .flat_map(|endpoint| {
            endpoint
                .targets
                .iter()
                .map(|target| (endpoint.id.clone(), target.name.clone()))
        })
        .collect()
}

fn circuit_name(circuit: CircuitState) -> &'static str {
    match circuit {
        CircuitState::Closed => TargetState::Closed.as_str(),
        CircuitState::Open => TargetState::Open.as_str(),
        CircuitState::HalfOpen => TargetState::HalfOpen.as_str(),
    }
}
