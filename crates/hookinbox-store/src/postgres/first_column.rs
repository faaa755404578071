//! The rows' first column, typed: what most of the store's statements
//! return (`RETURNING id`, `SELECT id …`).

use tokio_postgres::types::{FromSqlOwned, ToSql};
use tokio_postgres::{ToStatement, Transaction};

use super::db_error::PgError;

/// Runs `statement` in `tx` and collects the first column of every row
/// (into a `Vec`, a `HashSet`, …).
pub(crate) async fn first_column<T, C, S>(
    tx: &Transaction<'_>,
    statement: &S,
    params: &[&(dyn ToSql + Sync)],
) -> Result<C, PgError>
where
    T: FromSqlOwned,
    C: FromIterator<T>,
    S: ToStatement + ?Sized,
{
    Ok(tx
        .query(statement, params)
        .await?
        .iter()
        .map(|row| row.try_get::<_, T>(0))
        .collect::<Result<C, _>>()?)
}
