//! The `target_gate` rows on PostgreSQL (see `crate::target_gate`). A
//! lease of a target with a rate limit or a breaker locks its row (an
//! upsert that returns it), so leases of that target in every process
//! take turns on it: the tokens a lease takes and the rows it takes commit
//! together. A target with neither only reads it (is it paused?), beside
//! its first look for due rows, in the same round trip.

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Transaction};

use super::db_error::PgError;
use super::PostgresStore;
use crate::{
    AttemptVerdict, CircuitBreaker, CircuitState, CircuitTransition, GatePolicy, GateState,
    StoreError, TargetGateView, TargetGates,
};

const GATE_COLUMNS: &str = "paused_at_ms, circuit, failures, open_until_ms, tokens, tokens_at_ms";

fn gate_from_row(row: &tokio_postgres::Row, first: usize) -> Result<GateState, PgError> {
    let failures: i32 = row.try_get(first + 2)?;
    Ok(GateState {
        paused_at_ms: row.try_get(first)?,
        circuit: CircuitState::parse(row.try_get(first + 1)?),
        failures: u32::try_from(failures).unwrap_or(0),
        open_until_ms: row.try_get(first + 3)?,
        tokens: row.try_get(first + 4)?,
        tokens_at_ms: row.try_get(first + 5)?,
    })
}

/// The target's gate for a lease: locked when `policy` writes it, read
/// otherwise; the default when it has no row (and no policy).
pub(crate) async fn read_for_lease(
    tx: &Transaction<'_>,
    endpoint_id: &str,
    target: &str,
    policy: &GatePolicy,
) -> Result<GateState, PgError> {
    let sql = if policy.writes_state() {
        // DO UPDATE (of nothing) takes the row lock, and makes the row when
        // it is missing, so two first leases cannot both start full.
        format!(
            "INSERT INTO target_gate (endpoint_id, target) VALUES ($1, $2)
             ON CONFLICT (endpoint_id, target) DO UPDATE SET circuit = target_gate.circuit
             RETURNING {GATE_COLUMNS}"
        )
    } else {
        format!("SELECT {GATE_COLUMNS} FROM target_gate WHERE endpoint_id = $1 AND target = $2")
    };
    let statement = tx.prepare_cached(&sql).await?;
    match tx.query_opt(&statement, &[&endpoint_id, &target]).await? {
        Some(row) => gate_from_row(&row, 0),
        None => Ok(GateState::default()),
    }
}

/// Writes the circuit and the bucket (never the pause, an operator's).
pub(crate) async fn write(
    client: &impl GenericClient,
    endpoint_id: &str,
    target: &str,
    state: &GateState,
) -> Result<(), PgError> {
    let statement = client
        .prepare_cached(
            "INSERT INTO target_gate (endpoint_id, target, circuit, failures, open_until_ms, tokens, tokens_at_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (endpoint_id, target) DO UPDATE SET
                 circuit = excluded.circuit, failures = excluded.failures,
                 open_until_ms = excluded.open_until_ms, tokens = excluded.tokens,
                 tokens_at_ms = excluded.tokens_at_ms",
        )
        .await?;
    let failures = i32::try_from(state.failures).unwrap_or(i32::MAX);
    client
        .execute(
            &statement,
            &[
                &endpoint_id,
                &target,
                &state.circuit.as_str(),
                &failures,
                &state.open_until_ms,
                &state.tokens,
                &state.tokens_at_ms,
            ],
        )
        .await?;
    Ok(())
}

/// The row, locked (made when missing).
async fn locked(
    tx: &Transaction<'_>,
    endpoint_id: &str,
    target: &str,
) -> Result<GateState, PgError> {
    let policy = GatePolicy {
        rate_limit: None,
        circuit_breaker: Some(CircuitBreaker {
            failures: 1,
            open_for_ms: 0,
        }),
    };
    read_for_lease(tx, endpoint_id, target, &policy).await
}

/// Every gate row, by endpoint and target.
pub(crate) async fn list(client: &impl GenericClient) -> Result<Vec<TargetGateView>, PgError> {
    let statement = client
        .prepare_cached(&format!(
            "SELECT endpoint_id, target, {GATE_COLUMNS} FROM target_gate ORDER BY endpoint_id, target"
        ))
        .await?;
    client
        .query(&statement, &[])
        .await?
        .iter()
        .map(|row| {
            Ok(TargetGateView {
                endpoint_id: row.try_get(0)?,
                target: row.try_get(1)?,
                state: gate_from_row(row, 2)?,
            })
        })
        .collect()
}

#[async_trait]
impl TargetGates for PostgresStore {
    async fn pause(
        &self,
        endpoint_id: &str,
        target: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let paused = async {
            let statement = client
                .prepare_cached(
                    "INSERT INTO target_gate (endpoint_id, target, paused_at_ms) VALUES ($1, $2, $3)
                     ON CONFLICT (endpoint_id, target) DO UPDATE SET paused_at_ms = excluded.paused_at_ms
                     WHERE target_gate.paused_at_ms IS NULL",
                )
                .await?;
            let changed = client
                .execute(&statement, &[&endpoint_id, &target, &now_ms])
                .await?;
            Ok::<_, PgError>(changed == 1)
        };
        Ok(paused.await?)
    }

    async fn resume(
        &self,
        endpoint_id: &str,
        target: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut client = self.client().await?;
        let resumed = async {
            let tx = client.transaction().await?;
            let Some(paused_at_ms) = locked(&tx, endpoint_id, target).await?.paused_at_ms else {
                tx.commit().await?;
                return Ok::<_, PgError>(false);
            };
            tx.execute(
                "UPDATE target_gate SET paused_at_ms = NULL WHERE endpoint_id = $1 AND target = $2",
                &[&endpoint_id, &target],
            )
            .await?;
            // The time each pending delivery spent paused does not count
            // against its `max_age`: its age starts that much later.
            tx.execute(
                "UPDATE delivery SET created_at_ms = created_at_ms + ($3 - greatest(created_at_ms, $4))
                 WHERE endpoint_id = $1 AND target = $2 AND status = 'PENDING' AND created_at_ms < $3",
                &[&endpoint_id, &target, &now_ms, &paused_at_ms],
            )
            .await?;
            tx.execute(super::listen::NOTIFY, &[&self.notify_channel])
                .await?;
            tx.commit().await?;
            Ok(true)
        };
        Ok(resumed.await?)
    }

    async fn record_attempt(
        &self,
        endpoint_id: &str,
        target: &str,
        breaker: CircuitBreaker,
        verdict: AttemptVerdict,
        now_ms: i64,
    ) -> Result<Option<CircuitTransition>, StoreError> {
        let mut client = self.client().await?;
        let recorded = async {
            let tx = client.transaction().await?;
            let before = locked(&tx, endpoint_id, target).await?;
            let (after, transition) = before.after_attempt(&breaker, verdict, now_ms);
            if after != before {
                write(&tx, endpoint_id, target, &after).await?;
            }
            tx.commit().await?;
            Ok::<_, PgError>(transition)
        };
        Ok(recorded.await?)
    }
}
