//! The ledger: the one business handler of the `ledger` example and of the
//! embedding tests. Each event adds its `amount` to a running total inside
//! the transaction that records the event (at ingress, `accept_and_handle`)
//! or its delivery (a `handler` target), so an event counts once or not at
//! all.
//!
//! Entries are rows `(inbox_id, amount)` without a uniqueness constraint on
//! purpose: an event applied twice shows up as two rows, where a constraint
//! would turn the bug into an error and retry it away.
//!
//! The same ledger runs on both backends: it is a [`SqliteHandler`] (the
//! store's connection) and a [`PostgresHandler`] (the open transaction),
//! with one table, one fault and one amount rule.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use hookinbox_store::{HandledEvent, HandlerError, PostgresHandler, SqliteHandler};
use rusqlite::Connection;

/// The ledger's table, created before the first event ([`create`] on
/// SQLite; this text runs on PostgreSQL too).
pub const SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS ledger_entry (inbox_id TEXT NOT NULL, amount BIGINT NOT NULL)";

/// Creates the ledger's table in the database `conn` is open on.
pub fn create(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)
}

/// The running total: every entry's amount.
pub fn total(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT coalesce(sum(amount), 0) FROM ledger_entry",
        [],
        |row| row.get(0),
    )
}

/// How many entries each event has, by inbox id: 1 for every event applied
/// exactly once.
pub fn entries_per_event(conn: &Connection) -> rusqlite::Result<Vec<(String, i64)>> {
    conn.prepare("SELECT inbox_id, count(*) FROM ledger_entry GROUP BY inbox_id ORDER BY inbox_id")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect()
}

/// The amounts booked, by inbox id.
pub fn amounts(conn: &Connection) -> rusqlite::Result<Vec<(String, i64)>> {
    conn.prepare("SELECT inbox_id, amount FROM ledger_entry ORDER BY inbox_id")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect()
}

/// An event's amount as the lab reads it: a positive integer at `amount`
/// (not a fraction, not a string, not zero); `None` for anything else.
pub fn amount(event: &serde_json::Value) -> Option<i64> {
    event
        .get("amount")
        .and_then(serde_json::Value::as_i64)
        .filter(|amount| *amount > 0)
}

/// When the handler fails, after writing its entry and before returning —
/// the moment between recording an event and counting it. The failure must
/// roll both back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Fault {
    #[default]
    Never,
    /// Every time (the example's `X-Inject-Fault: after-record`).
    Always,
    /// The first `times` times an event of this amount is applied (a
    /// business service that is down for a moment).
    FirstTimes { amount: i64, times: usize },
}

/// Adds each event's amount to the ledger.
#[derive(Debug, Default)]
pub struct Ledger {
    fault: Fault,
    /// How long each application takes, on top of its writes.
    work: Duration,
    /// Calls for the amount [`Fault::FirstTimes`] names, failed or not.
    faulted_amount_calls: AtomicUsize,
}

impl Ledger {
    pub fn new() -> Ledger {
        Ledger::default()
    }

    /// A ledger that fails as `fault` says.
    pub fn failing(fault: Fault) -> Ledger {
        Ledger {
            fault,
            ..Ledger::default()
        }
    }

    /// Each application also takes `work` (on the store's writer thread,
    /// as real business logic would), so a batch of events takes a while.
    pub fn with_work(self, work: Duration) -> Ledger {
        Ledger { work, ..self }
    }

    /// How many times the event [`Fault::FirstTimes`] targets was applied
    /// or attempted.
    pub fn faulted_amount_calls(&self) -> usize {
        self.faulted_amount_calls.load(Ordering::SeqCst)
    }

    fn fails_now(&self, amount: i64) -> bool {
        match self.fault {
            Fault::Never => false,
            Fault::Always => true,
            Fault::FirstTimes {
                amount: faulty,
                times,
            } => {
                amount == faulty && self.faulted_amount_calls.fetch_add(1, Ordering::SeqCst) < times
            }
        }
    }
}

/// The amount of the event a handler is given, or why it cannot be booked.
fn booked_amount(event: &HandledEvent<'_>) -> Result<i64, HandlerError> {
    let body: serde_json::Value = serde_json::from_slice(event.payload)
        .map_err(|e| HandlerError(format!("not JSON: {e}")))?;
    amount(&body).ok_or_else(|| HandlerError("no positive integer amount".into()))
}

impl SqliteHandler for Ledger {
    fn handle(&self, conn: &Connection, event: &HandledEvent<'_>) -> Result<(), HandlerError> {
        let amount = booked_amount(event)?;
        conn.prepare_cached("INSERT INTO ledger_entry (inbox_id, amount) VALUES (?1, ?2)")
            .and_then(|mut insert| insert.execute(rusqlite::params![event.inbox_id, amount]))
            .map_err(|e| HandlerError(e.to_string()))?;
        if !self.work.is_zero() {
            std::thread::sleep(self.work);
        }
        if self.fails_now(amount) {
            return Err(HandlerError("ledger service unavailable".into()));
        }
        Ok(())
    }
}

#[async_trait]
impl PostgresHandler for Ledger {
    async fn handle(
        &self,
        tx: &hookinbox_store::tokio_postgres::Transaction<'_>,
        event: &HandledEvent<'_>,
    ) -> Result<(), HandlerError> {
        let amount = booked_amount(event)?;
        tx.execute(
            "INSERT INTO ledger_entry (inbox_id, amount) VALUES ($1, $2)",
            &[&event.inbox_id, &amount],
        )
        .await
        .map_err(|e| HandlerError(e.to_string()))?;
        if !self.work.is_zero() {
            tokio::time::sleep(self.work).await;
        }
        if self.fails_now(amount) {
            return Err(HandlerError("ledger service unavailable".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(payload: &[u8]) -> HandledEvent<'_> {
        HandledEvent {
            inbox_id: "0193-a",
            endpoint_id: "lab",
            provider_event_id: "a",
            event_type: None,
            payload,
        }
    }

    fn ledger_db() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        create(&conn).unwrap();
        conn
    }

    #[test]
    fn an_amount_is_a_positive_integer() {
        let read = |text: &str| amount(&serde_json::from_str(text).unwrap());
        assert_eq!(read(r#"{"amount":7}"#), Some(7));
        for refused in [
            r#"{}"#,
            r#"{"amount":0}"#,
            r#"{"amount":-4}"#,
            r#"{"amount":1.5}"#,
            r#"{"amount":"7"}"#,
            r#"{"amount":1e30}"#,
            r#"[7]"#,
        ] {
            assert_eq!(read(refused), None, "{refused}");
        }
    }

    #[test]
    fn each_event_adds_one_entry_and_a_fault_comes_after_the_write() {
        let conn = ledger_db();
        SqliteHandler::handle(&Ledger::new(), &conn, &event(br#"{"amount":5}"#)).unwrap();
        assert_eq!(total(&conn).unwrap(), 5);
        let failing = Ledger::failing(Fault::FirstTimes {
            amount: 13,
            times: 1,
        });
        assert!(SqliteHandler::handle(&failing, &conn, &event(br#"{"amount":13}"#)).is_err());
        // The store rolls the transaction back; here, without one, the
        // entry shows that the write came first.
        assert_eq!(total(&conn).unwrap(), 18);
        assert!(SqliteHandler::handle(&failing, &conn, &event(br#"{"amount":13}"#)).is_ok());
        assert!(SqliteHandler::handle(&failing, &conn, &event(br#"{"amount":2}"#)).is_ok());
        assert_eq!(failing.faulted_amount_calls(), 2);
        assert_eq!(
            entries_per_event(&conn).unwrap(),
            vec![("0193-a".to_owned(), 4)]
        );
    }

    #[test]
    fn an_event_without_an_amount_is_refused_without_a_write() {
        let conn = ledger_db();
        let refused = SqliteHandler::handle(&Ledger::new(), &conn, &event(br#"{"amount":"5"}"#));
        assert_eq!(
            refused,
            Err(HandlerError("no positive integer amount".into()))
        );
        assert_eq!(total(&conn).unwrap(), 0);
    }
}
