//! The `target_gate` rows on SQLite (see `crate::target_gate`): read and
//! written by the lease inside the writer's transaction, paused and
//! resumed by operators, moved by attempts' outcomes. One writer thread,
//! so the rate limit holds for every process sharing the file.

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::SqliteStore;
use crate::{
    AttemptVerdict, CircuitBreaker, CircuitState, CircuitTransition, GateState, StoreError,
    TargetGateView, TargetGates,
};

const GATE_COLUMNS: &str = "paused_at_ms, circuit, failures, open_until_ms, tokens, tokens_at_ms";

fn gate_from_row(row: &Row<'_>, first: usize) -> Result<GateState, rusqlite::Error> {
    Ok(GateState {
        paused_at_ms: row.get(first)?,
        circuit: CircuitState::parse(&row.get::<_, String>(first + 1)?),
        failures: row.get(first + 2)?,
        open_until_ms: row.get(first + 3)?,
        tokens: row.get(first + 4)?,
        tokens_at_ms: row.get(first + 5)?,
    })
}

/// The target's gate; the default (open, unpaused) when it has no row.
pub(crate) fn read(
    conn: &Connection,
    endpoint_id: &str,
    target: &str,
) -> Result<GateState, rusqlite::Error> {
    let state = conn
        .prepare_cached(&format!(
            "SELECT {GATE_COLUMNS} FROM target_gate WHERE endpoint_id = ?1 AND target = ?2"
        ))?
        .query_row(params![endpoint_id, target], |row| gate_from_row(row, 0))
        .optional()?;
    Ok(state.unwrap_or_default())
}

/// Writes the circuit and the bucket (never the pause: an operator's, which
/// this transaction read and does not change).
pub(crate) fn write(
    conn: &Connection,
    endpoint_id: &str,
    target: &str,
    state: &GateState,
) -> Result<(), rusqlite::Error> {
    conn.prepare_cached(
        "INSERT INTO target_gate (endpoint_id, target, circuit, failures, open_until_ms, tokens, tokens_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (endpoint_id, target) DO UPDATE SET
             circuit = excluded.circuit, failures = excluded.failures,
             open_until_ms = excluded.open_until_ms, tokens = excluded.tokens,
             tokens_at_ms = excluded.tokens_at_ms",
    )?
    .execute(params![
        endpoint_id,
        target,
        state.circuit.as_str(),
        state.failures,
        state.open_until_ms,
        state.tokens,
        state.tokens_at_ms
    ])?;
    Ok(())
}

fn pause(
    conn: &Connection,
    endpoint_id: &str,
    target: &str,
    now_ms: i64,
) -> Result<bool, rusqlite::Error> {
    let changed = conn
        .prepare_cached(
            "INSERT INTO target_gate (endpoint_id, target, paused_at_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (endpoint_id, target) DO UPDATE SET paused_at_ms = excluded.paused_at_ms
             WHERE target_gate.paused_at_ms IS NULL",
        )?
        .execute(params![endpoint_id, target, now_ms])?;
    Ok(changed == 1)
}

fn resume(
    conn: &Connection,
    endpoint_id: &str,
    target: &str,
    now_ms: i64,
) -> Result<bool, rusqlite::Error> {
    let Some(paused_at_ms) = read(conn, endpoint_id, target)?.paused_at_ms else {
        return Ok(false);
    };
    conn.prepare_cached(
        "UPDATE target_gate SET paused_at_ms = NULL WHERE endpoint_id = ?1 AND target = ?2",
    )?
    .execute(params![endpoint_id, target])?;
    // The time each pending delivery spent paused does not count against
    // its `max_age`: its age starts that much later.
    conn.prepare_cached(
        "UPDATE delivery SET created_at_ms = created_at_ms + (?3 - max(created_at_ms, ?4))
         WHERE endpoint_id = ?1 AND target = ?2 AND status = 'PENDING' AND created_at_ms < ?3",
    )?
    .execute(params![endpoint_id, target, now_ms, paused_at_ms])?;
    Ok(true)
}

fn record_attempt(
    conn: &Connection,
    endpoint_id: &str,
    target: &str,
    breaker: &CircuitBreaker,
    verdict: AttemptVerdict,
    now_ms: i64,
) -> Result<Option<CircuitTransition>, rusqlite::Error> {
    let before = read(conn, endpoint_id, target)?;
    let (after, transition) = before.after_attempt(breaker, verdict, now_ms);
    if after != before {
        write(conn, endpoint_id, target, &after)?;
    }
    Ok(transition)
}

/// Every gate row, by endpoint and target.
pub(crate) fn list(conn: &Connection) -> Result<Vec<TargetGateView>, rusqlite::Error> {
    conn.prepare_cached(&format!(
        "SELECT endpoint_id, target, {GATE_COLUMNS} FROM target_gate ORDER BY endpoint_id, target"
    ))?
    .query_map([], |row| {
        Ok(TargetGateView {
            endpoint_id: row.get(0)?,
            target: row.get(1)?,
            state: gate_from_row(row, 2)?,
        })
    })?
    .collect()
}

#[async_trait]
impl TargetGates for SqliteStore {
    async fn pause(
        &self,
        endpoint_id: &str,
        target: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let (endpoint_id, target) = (endpoint_id.to_owned(), target.to_owned());
        self.write(0, move |conn, _| {
            Ok(pause(conn, &endpoint_id, &target, now_ms)?)
        })
        .await
    }

    async fn resume(
        &self,
        endpoint_id: &str,
        target: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let (endpoint_id, target) = (endpoint_id.to_owned(), target.to_owned());
        self.write(0, move |conn, _| {
            Ok(resume(conn, &endpoint_id, &target, now_ms)?)
        })
        .await
    }

    async fn record_attempt(
        &self,
        endpoint_id: &str,
        target: &str,
        breaker: CircuitBreaker,
        verdict: AttemptVerdict,
        now_ms: i64,
    ) -> Result<Option<CircuitTransition>, StoreError> {
        let (endpoint_id, target) = (endpoint_id.to_owned(), target.to_owned());
        self.write(0, move |conn, _| {
            Ok(record_attempt(
                conn,
                &endpoint_id,
                &target,
                &breaker,
                verdict,
                now_ms,
            )?)
        })
        .await
    }
}
