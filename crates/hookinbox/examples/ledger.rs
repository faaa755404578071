//! `ledger` — hookinbox embedded as a library, with a handler whose business
//! change commits in the same transaction as the event's record.
//!
//! The handler runs while the provider's request waits, so it is built from
//! hookinbox's parts ([`hookinbox::verify`], [`hookinbox::store`]'s
//! `accept_and_handle`) under a router of its own. To acknowledge first and
//! apply the change later, with hookinbox's retries, run the same handler
//! as a `kind = "handler"` target of a [`hookinbox::Service`] instead.
//!
//! ```sh
//! cargo run --release -p hookinbox --example ledger -- --listen 127.0.0.1:8090 --db ledger.db --secret S
//! ```
//!
//! - `POST /webhook` with `X-Timestamp` and `X-Signature` (the `lab` scheme:
//!   hex HMAC-SHA256 of `"{timestamp}.{body}"`) and a JSON body
//!   `{"id": "…", "amount": <positive integer>}`.
//!   - 401 for a bad timestamp format, a timestamp outside ±300 s, or a bad signature;
//!   - 400 for unparseable JSON, no `id`, or an amount that is not a positive integer;
//!   - 409 when an id is reused with a different `{id, amount}`;
//!   - 503 when the commit has not finished within 2 s (a stalled disk): the
//!     outcome is unknown and the provider's retry is deduplicated;
//!   - 200 `{"accepted":true,"duplicate":false|true}` otherwise.
//! - Each event adds its `amount` to a running total exactly once: the event's
//!   record and the total's update are one SQLite transaction.
//! - `GET /total` → `{"total":N}`, read through a separate connection.
//! - With `--fault-injection`, a request carrying `X-Inject-Fault: after-record`
//!   fails between recording the event and updating the total: both roll back
//!   (503), and the provider's retry counts once.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Parser;
use hookinbox::rusqlite;
use hookinbox::store::{
    AcceptOutcome, Fingerprint, HandledEvent, HandlerError, NewEvent, SqliteHandler, SqliteOptions,
    SqliteStore, StoreError, UnsignedMetadata,
};
use hookinbox::verify::{
    adapter_for, AdapterSettings, Headers, Outcome, Reason, Request, SecretInput, Verifier,
};
use serde_json::json;

/// Longest a request waits for its commit, as `storage.commit_timeout`
/// does for `hookinbox serve`: a provider with a short timeout of its own
/// should see a 503 it retries, not a hung request.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Parser)]
struct Args {
    #[arg(long)]
    listen: SocketAddr,
    #[arg(long)]
    db: PathBuf,
    #[arg(long)]
    secret: String,
    /// Honour `X-Inject-Fault: after-record` (for demonstrations and tests).
    #[arg(long)]
    fault_injection: bool,
}

/// Adds one event's amount to the running total, inside the event's transaction.
struct AddToTotal {
    amount: i64,
    fail_after_record: bool,
}

impl SqliteHandler for AddToTotal {
    fn handle(
        &self,
        conn: &rusqlite::Connection,
        _event: &HandledEvent<'_>,
    ) -> Result<(), HandlerError> {
        // The event row is already written in this transaction: this is the
        // moment between recording it and updating the total.
        if self.fail_after_record {
            return Err(HandlerError(
                "injected fault after recording the event".into(),
            ));
        }
        conn.execute(
            "UPDATE ledger_total SET total = total + ?1 WHERE id = 1",
            [self.amount],
        )
        .map_err(|e| HandlerError(e.to_string()))?;
        Ok(())
    }
}

#[derive(Clone)]
struct Ledger {
    store: Arc<SqliteStore>,
    verifier: Arc<Verifier>,
    /// A connection of its own for reads: the total is read back outside the writer.
    reader: Arc<Mutex<rusqlite::Connection>>,
    fault_injection: bool,
}

fn refuse(status: StatusCode, reason: &str) -> Response {
    (status, Json(json!({"accepted": false, "error": reason}))).into_response()
}

async fn webhook(State(ledger): State<Ledger>, headers: HeaderMap, body: Bytes) -> Response {
    let mut verify_headers = Headers::new();
    for (name, value) in &headers {
        verify_headers.append(
            name.as_str(),
            String::from_utf8_lossy(value.as_bytes()).into_owned(),
        );
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let verified = match ledger
        .verifier
        .verify(&Request::new(&verify_headers, &body), now)
    {
        Ok(verified) => verified,
        Err(failure) => {
            let status = match failure.refusal.reason {
                Reason::MissingEventId | Reason::MalformedBody => StatusCode::BAD_REQUEST,
                _ => StatusCode::UNAUTHORIZED,
            };
            return refuse(status, failure.refusal.reason.as_str());
        }
    };
    let Outcome::Event(envelope) = verified.outcome() else {
        return refuse(StatusCode::BAD_REQUEST, "malformed_body");
    };
    let amount = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("amount").and_then(serde_json::Value::as_i64))
        .filter(|amount| *amount > 0);
    let Some(amount) = amount else {
        return refuse(StatusCode::BAD_REQUEST, "malformed_body");
    };
    // The ledger's notion of "the same event": same id and same amount.
    let fingerprint = Fingerprint::of(format!("{}\n{amount}", envelope.event_id).as_bytes());
    let event = NewEvent {
        endpoint_id: "ledger".into(),
        provider: "lab".into(),
        provider_event_id: envelope.event_id.clone(),
        event_type: envelope.event_type.clone(),
        object_id: None,
        object_version: None,
        provider_created_at: None,
        received_at_ms: now * 1000,
        content_type: Some("application/json".into()),
        payload: body.clone(),
        fingerprint,
        audit_headers: Vec::new(),
        matched_secret_version: verified.matched_secret_version().to_owned(),
        targets: Vec::new(),
        // `lab` signs its event id: the id alone tells two events apart.
        unsigned_metadata: UnsignedMetadata::default(),
        fingerprint_window_ms: None,
    };
    let fail_after_record = ledger.fault_injection
        && headers
            .get("x-inject-fault")
            .is_some_and(|v| v.as_bytes() == b"after-record");
    let handler = Arc::new(AddToTotal {
        amount,
        fail_after_record,
    });
    let accepted = tokio::time::timeout(
        COMMIT_TIMEOUT,
        ledger.store.accept_and_handle(event, handler),
    )
    .await;
    match accepted.unwrap_or_else(|_| Err(StoreError::Unavailable("commit deadline passed".into())))
    {
        Ok(AcceptOutcome::Inserted { .. }) => {
            Json(json!({"accepted": true, "duplicate": false})).into_response()
        }
        Ok(AcceptOutcome::Duplicate { .. }) => {
            Json(json!({"accepted": true, "duplicate": true})).into_response()
        }
        Ok(AcceptOutcome::Conflict { .. }) => refuse(StatusCode::CONFLICT, "conflict"),
        Err(StoreError::Handler(_)) | Err(_) => {
            let mut response = refuse(StatusCode::SERVICE_UNAVAILABLE, "unavailable");
            response
                .headers_mut()
                .insert("retry-after", axum::http::HeaderValue::from_static("1"));
            response
        }
    }
}

async fn total(State(ledger): State<Ledger>) -> Response {
    let reader = Arc::clone(&ledger.reader);
    let total = tokio::task::spawn_blocking(move || {
        let conn = reader.lock().map_err(|_| "reader poisoned".to_owned())?;
        conn.query_row("SELECT total FROM ledger_total WHERE id = 1", [], |row| {
            row.get::<_, i64>(0)
        })
        .map_err(|e| e.to_string())
    })
    .await;
    match total {
        Ok(Ok(total)) => Json(json!({"total": total})).into_response(),
        _ => refuse(StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
    }
}

/// Opens the ledger on `db`: its table, the store, the verifier, the router.
fn ledger(db: &Path, secret: &str, fault_injection: bool) -> anyhow::Result<Router> {
    let setup = rusqlite::Connection::open(db)?;
    setup.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE IF NOT EXISTS ledger_total (id INTEGER PRIMARY KEY CHECK (id = 1), total INTEGER NOT NULL);
         INSERT OR IGNORE INTO ledger_total (id, total) VALUES (1, 0);",
    )?;
    drop(setup);
    let store = SqliteStore::open(SqliteOptions::new(db))?;
    let verifier = Verifier::new(
        adapter_for("lab", &AdapterSettings::default())?,
        [SecretInput {
            version: "1".into(),
            value: secret.to_owned(),
            not_before: None,
            not_after: None,
        }],
    )?;
    let reader = rusqlite::Connection::open(db)?;
    let state = Ledger {
        store: Arc::new(store),
        verifier: Arc::new(verifier),
        reader: Arc::new(Mutex::new(reader)),
        fault_injection,
    };
    Ok(Router::new()
        .route("/webhook", post(webhook))
        .route("/total", get(total))
        .with_state(state))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let app = ledger(&args.db, &args.secret, args.fault_injection)?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    println!("ledger listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "ledger-test-secret";

    struct Running {
        base: String,
        _dir: tempfile::TempDir,
        db: PathBuf,
    }

    async fn start() -> Running {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("ledger.db");
        let app = ledger(&db, SECRET, true).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Running {
            base,
            _dir: dir,
            db,
        }
    }

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    /// Sends over a raw HTTP/1.1 connection; returns (status, JSON body).
    async fn send(
        base: &str,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> (u16, serde_json::Value) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let addr = base.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        let status = response[9..12].parse().unwrap();
        let json = response
            .split("\r\n\r\n")
            .nth(1)
            .and_then(|b| serde_json::from_str(b).ok())
            .unwrap_or(serde_json::Value::Null);
        (status, json)
    }

    async fn webhook_at(
        base: &str,
        body: &str,
        ts: &str,
        sign_ts: i64,
        extra: &[(&str, String)],
    ) -> (u16, serde_json::Value) {
        let signature = hookinbox::verify::providers::lab::sign(SECRET, sign_ts, body.as_bytes());
        let mut headers = vec![
            ("Content-Type", "application/json".to_owned()),
            ("X-Timestamp", ts.to_owned()),
            ("X-Signature", signature),
        ];
        headers.extend(extra.iter().cloned());
        send(base, "POST", "/webhook", &headers, body).await
    }

    async fn webhook(base: &str, body: &str) -> (u16, serde_json::Value) {
        let ts = now();
        webhook_at(base, body, &ts.to_string(), ts, &[]).await
    }

    async fn total(base: &str) -> i64 {
        send(base, "GET", "/total", &[], "").await.1["total"]
            .as_i64()
            .unwrap()
    }

    #[tokio::test]
    async fn the_whole_contract() {
        let ledger = start().await;
        let base = &ledger.base;
        assert_eq!(
            webhook(base, r#"{"id":"p1","amount":100}"#).await,
            (200, json!({"accepted": true, "duplicate": false}))
        );
        assert_eq!(
            webhook(base, r#"{"id":"p1","amount":100}"#).await,
            (200, json!({"accepted": true, "duplicate": true}))
        );
        // Re-serialised but the same {id, amount}: the same event.
        assert_eq!(
            webhook(base, r#"{ "amount": 100, "id": "p1" }"#).await.1["duplicate"],
            true
        );
        assert_eq!(webhook(base, r#"{"id":"p1","amount":101}"#).await.0, 409);
        assert_eq!(webhook(base, r#"{"id":"p2","amount":5}"#).await.0, 200);
        assert_eq!(total(base).await, 105);

        let body = r#"{"id":"p3","amount":1}"#;
        let ts = now();
        assert_eq!(
            webhook_at(base, body, &format!("{ts}.0"), ts, &[]).await.0,
            401,
            "timestamp format"
        );
        assert_eq!(
            webhook_at(base, body, &(ts - 301).to_string(), ts - 301, &[])
                .await
                .0,
            401,
            "window"
        );
        assert_eq!(
            webhook_at(base, body, &(ts + 301).to_string(), ts + 301, &[])
                .await
                .0,
            401,
            "future"
        );
        assert_eq!(
            webhook_at(base, body, &ts.to_string(), ts - 1, &[]).await.0,
            401,
            "signature"
        );
        assert_eq!(
            webhook(base, r#"{"id":"p3","amount":"#).await.0,
            400,
            "unparseable JSON"
        );
        assert_eq!(
            webhook(base, r#"{"id":"p3","amount":-4}"#).await.0,
            400,
            "negative amount"
        );
        assert_eq!(
            webhook(base, r#"{"id":"p3","amount":1.5}"#).await.0,
            400,
            "not an integer"
        );
        assert_eq!(total(base).await, 105, "nothing refused changed the total");
    }

    #[tokio::test]
    async fn a_fault_between_record_and_total_rolls_back_both() {
        let ledger = start().await;
        let base = &ledger.base;
        let body = r#"{"id":"f1","amount":7}"#;
        let ts = now();
        let fault = [("X-Inject-Fault", "after-record".to_owned())];
        let (status, _) = webhook_at(base, body, &ts.to_string(), ts, &fault).await;
        assert_eq!(status, 503);
        assert_eq!(total(base).await, 0);
        let recorded: i64 = rusqlite::Connection::open(&ledger.db)
            .unwrap()
            .query_row("SELECT count(*) FROM inbox", [], |r| r.get(0))
            .unwrap();
        assert_eq!(recorded, 0, "the event's record rolled back with the total");
        // The provider retries: it counts, once.
        assert_eq!(
            webhook(base, body).await,
            (200, json!({"accepted": true, "duplicate": false}))
        );
        assert_eq!(webhook(base, body).await.1["duplicate"], true);
        assert_eq!(total(base).await, 7);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_retries_count_once() {
        let ledger = start().await;
        let base = ledger.base.clone();
        let sends = (0..50).map(|n| {
            let base = base.clone();
            tokio::spawn(async move {
                let body = format!(r#"{{"id":"c{}","amount":{}}}"#, n % 10, n % 10 + 1);
                webhook(&base, &body).await.0
            })
        });
        for send in futures::future::join_all(sends).await {
            assert_eq!(send.unwrap(), 200);
        }
        // ids c0..c9 with amounts 1..10, each counted once.
        assert_eq!(total(&base).await, 55);
    }
}
