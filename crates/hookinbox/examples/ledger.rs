//! `ledger` — hookinbox embedded as a library: a handler whose business
//! change commits in the same transaction as the event's record, answering
//! exactly as the lab's reference ledger does.
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
//!   `{"id": "…", "amount": <positive integer>}`. The lab's answers:
//!   - 401 when verification fails: no or a malformed signature, a wrong
//!     one, a timestamp that is not an integer or is more than 300 s away;
//!   - 400 when the body is not JSON;
//!   - 409 when the lab's `apply` raises: no `id`, an `amount` that is not a
//!     positive integer, or an id reused with a different `{id, amount}`;
//!   - 503 when the commit has not finished within 2 s (a stalled disk): the
//!     outcome is unknown and the provider's retry is deduplicated;
//!   - 200 `{"accepted":true,"duplicate":false|true}` otherwise.
//! - Each event adds its `amount` to a running total exactly once: the
//!   event's record and its ledger entry are one SQLite transaction (the
//!   handler is `hookinbox_testing::ledger::Ledger`, shared with the tests
//!   that embed hookinbox as a delivery target).
//! - `GET /total` → `{"total":N}`, read through a separate connection.
//! - Any other path: 404 `{"accepted":false,"error":"not_found"}`. Every
//!   JSON answer ends with a newline.
//! - With `--fault-injection`, a request carrying `X-Inject-Fault:
//!   after-record` fails between recording the event and counting it: both
//!   roll back (503), and the provider's retry counts once.
//! - SIGTERM or Ctrl-C: stops accepting, finishes the requests in flight,
//!   and exits 0.
//!
//! The clock is passed in ([`Clock`]): the wall clock when it runs, a fixed
//! instant in its tests, so the timestamp window is tested at its edges.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use clap::Parser;
use hookinbox::store::{
    AcceptOutcome, Fingerprint, NewEvent, SqliteHandler, SqliteOptions, SqliteStore, StoreError,
    UnsignedMetadata,
};
use hookinbox::verify::{
    adapter_for, AdapterSettings, Headers, Outcome, Reason, Request, SecretInput, Verifier,
};
use hookinbox_testing::ledger::{self, Fault, Ledger};
use serde_json::json;

/// Longest a request waits for its commit, as `storage.commit_timeout`
/// does for `hookinbox serve`: a provider with a short timeout of its own
/// should see a 503 it retries, not a hung request.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Parser)]
struct Args {
    /// Address to listen on (port 0: any free port; the bound address is printed).
    #[arg(long)]
    listen: SocketAddr,
    /// The SQLite database: the inbox and the ledger.
    #[arg(long)]
    db: PathBuf,
    /// The `lab` secret senders sign with.
    #[arg(long)]
    secret: String,
    /// Honour `X-Inject-Fault: after-record` (for demonstrations and tests).
    #[arg(long)]
    fault_injection: bool,
}

/// Where the ledger reads the time, in unix seconds.
trait Clock: Send + Sync + 'static {
    fn unix_seconds(&self) -> i64;
}

/// The wall clock.
struct SystemClock;

impl Clock for SystemClock {
    fn unix_seconds(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_secs() as i64)
            .unwrap_or_default()
    }
}

/// Why the lab refuses a request, and so which status it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Verification failed: the signature or the timestamp (401).
    Unverified(Reason),
    /// The body is not JSON (400).
    NotJson,
    /// The lab's `apply` raised: no id, a bad amount, or an id reused with
    /// another amount (409). The reason: `missing_event_id`,
    /// `malformed_body` or `conflict`.
    Apply(&'static str),
    /// The commit failed or did not finish in time (503, `Retry-After: 1`).
    Unavailable,
}

impl Refusal {
    /// What a verifier's refusal is in the lab's terms: a body that is not
    /// JSON is the parser's, a missing id is `apply`'s, the rest are
    /// verification's.
    fn of_verification(reason: Reason) -> Refusal {
        match reason {
            Reason::MalformedBody => Refusal::NotJson,
            Reason::MissingEventId => Refusal::Apply(reason.as_str()),
            Reason::MissingSignature
            | Reason::MalformedSignature
            | Reason::Signature
            | Reason::Timestamp => Refusal::Unverified(reason),
        }
    }

    fn status(self) -> StatusCode {
        match self {
            Refusal::Unverified(_) => StatusCode::UNAUTHORIZED,
            Refusal::NotJson => StatusCode::BAD_REQUEST,
            Refusal::Apply(_) => StatusCode::CONFLICT,
            Refusal::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn reason(self) -> &'static str {
        match self {
            Refusal::Unverified(reason) => reason.as_str(),
            Refusal::NotJson => "malformed_body",
            Refusal::Apply(reason) => reason,
            Refusal::Unavailable => "unavailable",
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = json_line(
            self.status(),
            &json!({"accepted": false, "error": self.reason()}),
        );
        if self == Refusal::Unavailable {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// `value` as one line of JSON.
fn json_line(status: StatusCode, value: &serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        format!("{value}\n"),
    )
        .into_response()
}

/// What every request of the ledger shares.
#[derive(Clone)]
struct App {
    store: Arc<SqliteStore>,
    verifier: Arc<Verifier>,
    /// The handler of every event (fault injection aside).
    ledger: Arc<Ledger>,
    /// A connection of its own for reads: the total is read back outside
    /// the writer.
    reader: Arc<Mutex<hookinbox::rusqlite::Connection>>,
    clock: Arc<dyn Clock>,
    fault_injection: bool,
}

async fn webhook(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    match accept(&app, &headers, body).await {
        Ok(duplicate) => json_line(
            StatusCode::OK,
            &json!({"accepted": true, "duplicate": duplicate}),
        ),
        Err(refusal) => refusal.into_response(),
    }
}

/// Verifies the request, checks it as the lab's `apply` does, and records
/// it with its ledger entry; whether it was a duplicate.
async fn accept(app: &App, headers: &HeaderMap, body: Bytes) -> Result<bool, Refusal> {
    let mut verify_headers = Headers::new();
    for (name, value) in headers {
        verify_headers.append(
            name.as_str(),
            String::from_utf8_lossy(value.as_bytes()).into_owned(),
        );
    }
    let now = app.clock.unix_seconds();
    let verified = app
        .verifier
        .verify(&Request::new(&verify_headers, &body), now)
        .map_err(|failure| Refusal::of_verification(failure.refusal.reason))?;
    // The `lab` scheme has no handshakes and this endpoint no type filter:
    // a verified request is an event.
    let Outcome::Event(envelope) = verified.outcome() else {
        return Err(Refusal::NotJson);
    };
    let amount = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|event| ledger::amount(&event))
        .ok_or(Refusal::Apply("malformed_body"))?;
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
        not_routed: Vec::new(),
        delays_ms: Default::default(),
        // `lab` signs its event id: the id alone tells two events apart.
        unsigned_metadata: UnsignedMetadata::default(),
        fingerprint_window_ms: None,
        trace_parent: None,
    };
    let fail_after_record = app.fault_injection
        && headers
            .get("x-inject-fault")
            .is_some_and(|v| v.as_bytes() == b"after-record");
    let handler: Arc<dyn SqliteHandler> = if fail_after_record {
        Arc::new(Ledger::failing(Fault::Always))
    } else {
        app.ledger.clone()
    };
    let accepted =
        tokio::time::timeout(COMMIT_TIMEOUT, app.store.accept_and_handle(event, handler))
            .await
            .unwrap_or_else(|_| Err(StoreError::Unavailable("commit deadline passed".into())));
    match accepted {
        Ok(AcceptOutcome::Inserted { .. }) => Ok(false),
        Ok(AcceptOutcome::Duplicate { .. }) => Ok(true),
        Ok(AcceptOutcome::Conflict { .. }) => Err(Refusal::Apply("conflict")),
        Err(_) => Err(Refusal::Unavailable),
    }
}

async fn total(State(app): State<App>) -> Response {
    let reader = Arc::clone(&app.reader);
    let total = tokio::task::spawn_blocking(move || {
        let conn = reader.lock().map_err(|_| "reader poisoned".to_owned())?;
        ledger::total(&conn).map_err(|e| e.to_string())
    })
    .await;
    match total {
        Ok(Ok(total)) => json_line(StatusCode::OK, &json!({"total": total})),
        _ => Refusal::Unavailable.into_response(),
    }
}

async fn not_found() -> Response {
    json_line(
        StatusCode::NOT_FOUND,
        &json!({"accepted": false, "error": "not_found"}),
    )
}

/// Opens the ledger on `db`: its table, the store, the verifier, the router.
fn ledger_app(
    db: &Path,
    secret: &str,
    fault_injection: bool,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<Router> {
    let setup = hookinbox::rusqlite::Connection::open(db)?;
    setup.pragma_update(None, "journal_mode", "WAL")?;
    ledger::create(&setup)?;
    drop(setup);
    let store = SqliteStore::open(SqliteOptions::new(db))?;
    let verifier = Verifier::new(
        adapter_for("lab", &AdapterSettings::default())?,
        [SecretInput {
            version: "1".into(),
            value: secret.into(),
            not_before: None,
            not_after: None,
        }],
    )?;
    let reader = hookinbox::rusqlite::Connection::open(db)?;
    let app = App {
        store: Arc::new(store),
        verifier: Arc::new(verifier),
        ledger: Arc::new(Ledger::new()),
        reader: Arc::new(Mutex::new(reader)),
        clock,
        fault_injection,
    };
    Ok(Router::new()
        .route("/webhook", post(webhook))
        .route("/total", get(total))
        .fallback(not_found)
        .with_state(app))
}

/// The program: opens the ledger, listens, announces the address on
/// stdout, serves until `shutdown` completes (requests in flight are
/// finished), and returns.
async fn run(
    args: Args,
    clock: Arc<dyn Clock>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let app = ledger_app(&args.db, &args.secret, args.fault_injection, clock)?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    println!("ledger listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await?;
    println!("ledger stopped");
    Ok(())
}

/// Resolves on SIGTERM (how service managers stop a process) or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut terminate) => {
                terminate.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    run(Args::parse(), Arc::new(SystemClock), shutdown_signal()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    const SECRET: &str = "ledger-test-secret";
    /// The instant the ledger's clock shows in these tests.
    const NOW: i64 = 1_700_000_000;

    /// A clock stopped at [`NOW`].
    struct Stopped;

    impl Clock for Stopped {
        fn unix_seconds(&self) -> i64 {
            NOW
        }
    }

    struct Opened {
        app: Router,
        db: PathBuf,
        _dir: tempfile::TempDir,
    }

    fn open() -> Opened {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("ledger.db");
        let app = ledger_app(&db, SECRET, true, Arc::new(Stopped)).unwrap();
        Opened { app, db, _dir: dir }
    }

    /// How a request is signed.
    #[derive(Clone, Copy)]
    enum Signature {
        /// By the sender holding `secret`, over `timestamp`.
        By {
            secret: &'static str,
            timestamp: i64,
        },
        /// This header value.
        Raw(&'static str),
        /// No `X-Signature` header.
        Missing,
    }

    /// A request as a sender makes it: `X-Timestamp` (or none), a
    /// signature, a body.
    #[derive(Clone)]
    struct Sent {
        timestamp: Option<String>,
        signature: Signature,
        body: String,
    }

    /// Signed now, as the ledger's clock tells it.
    fn signed(body: &str) -> Sent {
        signed_at(NOW, body)
    }

    fn signed_at(timestamp: i64, body: &str) -> Sent {
        Sent {
            timestamp: Some(timestamp.to_string()),
            signature: Signature::By {
                secret: SECRET,
                timestamp,
            },
            body: body.to_owned(),
        }
    }

    /// The status and the answer (parsed; the body must be one JSON line).
    async fn answer(
        app: &Router,
        request: axum::http::Request<axum::body::Body>,
    ) -> (u16, serde_json::Value) {
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let text = std::str::from_utf8(&body).unwrap();
        let line = text
            .strip_suffix('\n')
            .unwrap_or_else(|| panic!("not one line of JSON: {text:?}"));
        (status, serde_json::from_str(line).unwrap())
    }

    async fn webhook(app: &Router, sent: Sent, extra: &[(&str, &str)]) -> (u16, serde_json::Value) {
        let mut request =
            axum::http::Request::post("/webhook").header("content-type", "application/json");
        if let Some(timestamp) = &sent.timestamp {
            request = request.header("x-timestamp", timestamp);
        }
        match sent.signature {
            Signature::By { secret, timestamp } => {
                let signature = hookinbox::verify::providers::lab::sign(
                    secret,
                    timestamp,
                    sent.body.as_bytes(),
                );
                request = request.header("x-signature", signature);
            }
            Signature::Raw(value) => request = request.header("x-signature", value),
            Signature::Missing => {}
        }
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        answer(app, request.body(sent.body.into()).unwrap()).await
    }

    async fn total(app: &Router) -> i64 {
        let request = axum::http::Request::get("/total")
            .body(Default::default())
            .unwrap();
        let (status, answer) = self::answer(app, request).await;
        assert_eq!(status, 200);
        answer["total"].as_i64().unwrap()
    }

    fn accepted(duplicate: bool) -> serde_json::Value {
        json!({"accepted": true, "duplicate": duplicate})
    }

    fn refused(reason: &str) -> serde_json::Value {
        json!({"accepted": false, "error": reason})
    }

    /// The lab's answer to one case.
    #[derive(Debug, Clone, Copy)]
    enum Lab {
        /// 200, a new event.
        New,
        /// 200, an event already recorded.
        Duplicate,
        /// Refused with this status and reason.
        Refused(u16, &'static str),
    }

    impl Lab {
        fn answer(self) -> (u16, serde_json::Value) {
            match self {
                Lab::New => (200, accepted(false)),
                Lab::Duplicate => (200, accepted(true)),
                Lab::Refused(status, reason) => (status, refused(reason)),
            }
        }
    }

    /// The lab's cases, in order against one ledger: what is sent, what the
    /// lab answers, and the total after it. One row a line, as a table.
    #[rustfmt::skip]
    fn lab_cases() -> Vec<(&'static str, Sent, Lab, i64)> {
        use Lab::{Duplicate, New, Refused};
        let p = |id: &str, amount: &str| format!(r#"{{"id":"{id}","amount":{amount}}}"#);
        let body = p("p9", "1");
        let unsigned = |signature| Sent { signature, ..signed(&body) };
        let stamped = |timestamp: Option<&str>| Sent { timestamp: timestamp.map(str::to_owned), ..signed(&body) };
        let another_secret = Signature::By { secret: "another-secret", timestamp: NOW };
        let another_timestamp = Signature::By { secret: SECRET, timestamp: NOW - 1 };
        vec![
            ("a new event", signed(&p("p1", "100")), New, 100),
            ("the same event again", signed(&p("p1", "100")), Duplicate, 100),
            ("the same {id, amount}, written differently", signed(r#"{ "amount": 100, "id": "p1" }"#), Duplicate, 100),
            ("the id reused with another amount", signed(&p("p1", "101")), Refused(409, "conflict"), 100),
            ("another event", signed(&p("p2", "5")), New, 105),
            ("signed 300 s ago: the window's edge", signed_at(NOW - 300, &p("p3", "1")), New, 106),
            ("signed 300 s ahead: the other edge", signed_at(NOW + 300, &p("p4", "1")), New, 107),
            ("signed 301 s ago", signed_at(NOW - 301, &body), Refused(401, "timestamp"), 107),
            ("signed 301 s ahead", signed_at(NOW + 301, &body), Refused(401, "timestamp"), 107),
            ("a timestamp that is not an integer", stamped(Some("1700000000.0")), Refused(401, "timestamp"), 107),
            ("no timestamp", stamped(None), Refused(401, "missing_signature"), 107),
            ("no signature", unsigned(Signature::Missing), Refused(401, "missing_signature"), 107),
            ("a signature that is not hex", unsigned(Signature::Raw("not-hex")), Refused(401, "malformed_signature"), 107),
            ("signed with another secret", unsigned(another_secret), Refused(401, "signature"), 107),
            ("signed over another timestamp", unsigned(another_timestamp), Refused(401, "signature"), 107),
            ("a body that is not JSON", signed(r#"{"id":"p5","amount":"#), Refused(400, "malformed_body"), 107),
            ("no id", signed(r#"{"amount":5}"#), Refused(409, "missing_event_id"), 107),
            ("JSON that is not an object", signed("[5]"), Refused(409, "missing_event_id"), 107),
            ("no amount", signed(r#"{"id":"p6"}"#), Refused(409, "malformed_body"), 107),
            ("amount zero", signed(&p("p6", "0")), Refused(409, "malformed_body"), 107),
            ("amount negative", signed(&p("p6", "-4")), Refused(409, "malformed_body"), 107),
            ("amount a fraction", signed(&p("p6", "1.5")), Refused(409, "malformed_body"), 107),
            ("amount a string", signed(&p("p6", r#""5""#)), Refused(409, "malformed_body"), 107),
            ("amount past 64 bits", signed(&p("p6", "1e30")), Refused(409, "malformed_body"), 107),
            ("the refused id, now with a good amount", signed(&p("p6", "2")), New, 109),
        ]
    }

    #[tokio::test]
    async fn every_lab_case_gets_the_labs_answer() {
        let ledger = open();
        for (case, sent, lab, total_after) in lab_cases() {
            assert_eq!(
                webhook(&ledger.app, sent, &[]).await,
                lab.answer(),
                "{case}"
            );
            assert_eq!(total(&ledger.app).await, total_after, "{case}: the total");
        }
    }

    #[tokio::test]
    async fn a_fault_between_record_and_total_rolls_back_both() {
        let ledger = open();
        let event = signed(r#"{"id":"f1","amount":7}"#);
        let fault = [("x-inject-fault", "after-record")];
        assert_eq!(
            webhook(&ledger.app, event.clone(), &fault).await,
            (503, refused("unavailable"))
        );
        assert_eq!(total(&ledger.app).await, 0);
        let recorded: i64 = hookinbox::rusqlite::Connection::open(&ledger.db)
            .unwrap()
            .query_row("SELECT count(*) FROM inbox", [], |r| r.get(0))
            .unwrap();
        assert_eq!(recorded, 0, "the event's record rolled back with the total");
        // The provider retries: it counts, once.
        assert_eq!(
            webhook(&ledger.app, event.clone(), &[]).await,
            (200, accepted(false))
        );
        assert_eq!(
            webhook(&ledger.app, event, &[]).await,
            (200, accepted(true))
        );
        assert_eq!(total(&ledger.app).await, 7);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_retries_count_once() {
        let ledger = open();
        // ids c0..c9 with amounts 1..10, each sent five times at once.
        let sends = (0..50).map(|n| {
            let app = ledger.app.clone();
            let event = signed(&format!(
                r#"{{"id":"c{}","amount":{}}}"#,
                n % 10,
                n % 10 + 1
            ));
            tokio::spawn(async move { webhook(&app, event, &[]).await.0 })
        });
        for send in futures::future::join_all(sends).await {
            assert_eq!(send.unwrap(), 200);
        }
        assert_eq!(total(&ledger.app).await, 55, "each event counted once");
    }

    #[tokio::test]
    async fn any_other_path_is_a_json_404() {
        let ledger = open();
        for request in [
            axum::http::Request::get("/nowhere")
                .body(Default::default())
                .unwrap(),
            axum::http::Request::post("/webhook/")
                .body(Default::default())
                .unwrap(),
        ] {
            assert_eq!(
                answer(&ledger.app, request).await,
                (404, refused("not_found"))
            );
        }
    }

    const CHILD_DB: &str = "LEDGER_TEST_CHILD_DB";

    /// Not a test of its own: the ledger program that
    /// `sigterm_stops_it_cleanly_and_keeps_what_it_accepted` starts (this
    /// test binary re-run with the variable set) and stops. Without the
    /// variable it returns.
    #[tokio::test]
    #[ignore = "the child process of sigterm_stops_it_cleanly_and_keeps_what_it_accepted"]
    async fn ledger_program() {
        let Some(db) = std::env::var_os(CHILD_DB) else {
            return;
        };
        let args = Args {
            listen: "127.0.0.1:0".parse().unwrap(),
            db: db.into(),
            secret: SECRET.into(),
            fault_injection: false,
        };
        run(args, Arc::new(SystemClock), shutdown_signal())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn sigterm_stops_it_cleanly_and_keeps_what_it_accepted() {
        use std::io::BufRead;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("ledger.db");
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tests::ledger_program",
                "--ignored",
                "--nocapture",
            ])
            .env(CHILD_DB, &db)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut lines = Vec::new();
        let addr = loop {
            let mut line = String::new();
            assert_ne!(stdout.read_line(&mut line).unwrap(), 0, "{lines:?}");
            if let Some(addr) = line.trim().strip_prefix("ledger listening on http://") {
                break addr.to_owned();
            }
            lines.push(line);
        };

        // One event, over real HTTP, answered before the signal.
        let body = r#"{"id":"t1","amount":3}"#;
        let ts = SystemClock.unix_seconds();
        let signature = hookinbox::verify::providers::lab::sign(SECRET, ts, body.as_bytes());
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let request = format!(
            "POST /webhook HTTP/1.1\r\nHost: ledger\r\nConnection: close\r\n\
             Content-Type: application/json\r\nX-Timestamp: {ts}\r\nX-Signature: {signature}\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");

        let killed = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("the ledger did not stop within 10 s of SIGTERM");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let rest: Vec<String> = stdout.lines().map(Result::unwrap).collect();
        assert!(status.success(), "exit {status:?}: {rest:?}");
        assert!(rest.iter().any(|line| line == "ledger stopped"), "{rest:?}");
        let conn = hookinbox::rusqlite::Connection::open(&db).unwrap();
        assert_eq!(
            ledger::total(&conn).unwrap(),
            3,
            "the accepted event is kept"
        );
    }
}
