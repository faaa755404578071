//! A database that does not exist, said plainly at start-up.
//!
//! The server answers a connection to a missing database with SQLSTATE
//! 3D000 (`invalid_catalog_name`); through the pool that reads "Error
//! occurred while creating a new object: db error", which tells a newcomer
//! nothing. This names the database and the command that creates it, with
//! the host, port and user of the URL — never its password (docs/scaling.md,
//! "Many processes: PostgreSQL").

use tokio_postgres::error::SqlState;
use tokio_postgres::Config;

use super::db_error::PgError;

/// The message for `error` when it is a missing database, else `None`.
pub(crate) fn explain(error: &PgError, config: &Config) -> Option<String> {
    let db = match error {
        PgError::Db(error) => error,
        PgError::Pool(deadpool_postgres::PoolError::Backend(error)) => error,
        _ => return None,
    };
    if db.code() != Some(&SqlState::INVALID_CATALOG_NAME) {
        return None;
    }
    Some(message(config))
}

/// `database "x" does not exist; create it with …`, from the connection
/// settings (libpq's defaults: the database is named for the user).
fn message(config: &Config) -> String {
    let user = config.get_user().unwrap_or("postgres");
    let database = config.get_dbname().unwrap_or(user);
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        #[cfg(unix)]
        Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "database \"{database}\" does not exist on {host}:{port}; create it with \
         `createdb -h {host} -p {port} -U postgres -O {user} {database}` (or in psql, as a \
         superuser: CREATE DATABASE \"{database}\" OWNER \"{user}\";)"
    )
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    #[test]
    fn names_the_database_host_and_owner_never_the_password() {
        let config =
            Config::from_str("postgres://hookinbox:s3cret-pw@db.internal:6543/inbox").unwrap();
        let text = message(&config);
        assert!(
            text.starts_with("database \"inbox\" does not exist on db.internal:6543; create it with `createdb -h db.internal -p 6543 -U postgres -O hookinbox inbox`"),
            "{text}"
        );
        assert!(!text.contains("s3cret-pw"), "{text}");
    }

    #[test]
    fn without_a_database_name_it_is_the_users() {
        let config = Config::from_str("postgres://hookinbox@127.0.0.1").unwrap();
        assert!(
            message(&config).starts_with("database \"hookinbox\" does not exist on 127.0.0.1:5432")
        );
    }
}
