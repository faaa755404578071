//! The response contract of docs/architecture.md §2, status code by status code,
//! against the real binary over real HTTP, with the store checked after
//! through its operator reads — on SQLite and on PostgreSQL alike.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::*;

on_both_backends!(
    new_event_then_duplicate_then_conflict,
    stored_row_keeps_raw_bytes_fingerprint_and_metadata,
    verification_failures_are_401_or_400_and_store_nothing,
    method_endpoint_and_content_type,
    unsupported_type_is_acknowledged_and_not_stored,
    rate_limit_answers_429_with_retry_after,
    declared_oversize_is_refused_before_the_body_is_sent,
    streamed_oversize_is_cut_off_at_the_limit,
    too_many_header_fields_or_too_large_a_head_is_431,
    generic_hmac_endpoint_is_configured_from_the_file,
    a_flood_of_bad_signatures_is_refused_without_a_log_line_each,
    basic_auth_is_required_beside_the_signature,
);

/// A server on `backend` with the `lab` endpoint and `extra` TOML.
fn start(backend: Backend, extra: &str) -> (Storage, Server) {
    let storage = Storage::new(backend);
    let config = storage.config().extra(extra).to_string();
    let server = Server::start(storage.dir.path(), &config);
    (storage, server)
}

/// (inbox id, endpoint, provider event id) of every stored event, oldest first.
async fn stored(storage: &Storage) -> Vec<(String, String, String)> {
    storage
        .events()
        .await
        .into_iter()
        .map(|e| (e.id, e.endpoint_id, e.provider_event_id))
        .collect()
}

async fn new_event_then_duplicate_then_conflict(backend: Backend) {
    let (storage, server) = start(backend, "");
    let client = client();
    let url = server.url("/hooks/lab");
    let event = lab_event("evt_contract_1");

    let first = post(&client, &url, &event).await;
    assert_eq!(first.status, 200);
    let first = first.json();
    assert_eq!(first["accepted"], true);
    assert_eq!(first["duplicate"], false);
    let id = first["id"].as_str().unwrap().to_owned();

    let again = post(&client, &url, &event).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["duplicate"], true);
    assert_eq!(again.json()["id"], id.as_str());

    // Same id, different (validly signed) body: a conflict, and nothing changes.
    let other = lab_signed(
        r#"{"id":"evt_contract_1","type":"payment.succeeded","amount":999}"#,
        now(),
    );
    let conflict = post(&client, &url, &other).await;
    assert_eq!(conflict.status, 409);
    assert_eq!(
        conflict.json(),
        serde_json::json!({"accepted": false, "error": "conflict"})
    );

    assert_eq!(
        stored(&storage).await,
        vec![(id, "lab".to_owned(), "evt_contract_1".to_owned())]
    );
}

async fn stored_row_keeps_raw_bytes_fingerprint_and_metadata(backend: Backend) {
    let (storage, server) = start(backend, "");
    let body = "{\"id\":\"evt_raw\",  \"type\":\"refund.created\",\"object_id\":\"re_1\",\"object_version\":7}";
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_signed(body, now()),
    )
    .await;
    assert_eq!(answer.status, 200);
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    let (detail, payload) = storage.event(&id).await;
    assert_eq!(payload, body.as_bytes(), "raw bytes, not re-serialised");
    if let Some(db) = storage.sqlite_file() {
        assert_eq!(
            payload_log_bytes(db),
            body.len() as u64,
            "the body is in the payload log, once"
        );
    }
    assert_eq!(
        detail.payload_sha256,
        hookinbox_store::Fingerprint::of(body.as_bytes())
            .0
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    assert_eq!(detail.matched_secret_version, "v1");
    assert_eq!(detail.summary.event_type.as_deref(), Some("refund.created"));
    assert_eq!(detail.object_id.as_deref(), Some("re_1"));
    assert_eq!(detail.object_version, Some(7));
    assert_eq!(detail.content_type.as_deref(), Some("application/json"));
    // The endpoint has no targets: nothing is left to do for the event,
    // so it is PROCESSED in the transaction that accepted it.
    assert_eq!(detail.summary.status, "PROCESSED");
}

async fn verification_failures_are_401_or_400_and_store_nothing(backend: Backend) {
    let (storage, server) = start(backend, "");
    let client = client();
    let url = server.url("/hooks/lab");
    let marker = "UNVERIFIED-MARKER-7f3a";
    let body = format!(r#"{{"id":"evt_bad","note":"{marker}"}}"#);
    let good = lab_signed(body.clone(), now());

    let mut missing = good.clone();
    missing.headers.retain(|(n, _)| n != "x-signature");
    let answer = post(&client, &url, &missing).await;
    assert_eq!(
        (answer.status, answer.error()),
        (401, "missing_signature".into())
    );

    let mut malformed = good.clone();
    malformed.headers.retain(|(n, _)| n != "x-signature");
    malformed
        .headers
        .push(("x-signature".into(), "not-hex".into()));
    let answer = post(&client, &url, &malformed).await;
    assert_eq!(
        (answer.status, answer.error()),
        (401, "malformed_signature".into())
    );

    let mut tampered = good.clone();
    tampered.body = body.replace("evt_bad", "evt_bax").into();
    let answer = post(&client, &url, &tampered).await;
    assert_eq!((answer.status, answer.error()), (401, "signature".into()));

    // Past the 300 s tolerance either way. The future one has a margin: the
    // server reads its clock after the test read its own, and a second may
    // have begun in between (the exact boundary is the verify crate's
    // `freshness` test, on a clock it gives).
    for skew in [-301, 310] {
        let stale = lab_signed(body.clone(), now() + skew);
        let answer = post(&client, &url, &stale).await;
        assert_eq!(
            (answer.status, answer.error()),
            (401, "timestamp".into()),
            "skew {skew}"
        );
    }

    let no_id = lab_signed(r#"{"amount":1}"#, now());
    let answer = post(&client, &url, &no_id).await;
    assert_eq!(
        (answer.status, answer.error()),
        (400, "missing_event_id".into())
    );

    let not_json = lab_signed("id=1", now());
    let answer = post(&client, &url, &not_json).await;
    assert_eq!(
        (answer.status, answer.error()),
        (400, "malformed_body".into())
    );

    assert!(storage.events().await.is_empty());
    if let Some(db) = storage.sqlite_file() {
        assert_eq!(
            payload_log_bytes(db),
            0,
            "no byte of an unverified body was written"
        );
    }
    assert!(
        !server.logs().contains(marker),
        "an unverified body reached the logs"
    );
}

async fn method_endpoint_and_content_type(backend: Backend) {
    let (_storage, server) = start(backend, "");
    let client = client();
    let event = lab_event("evt_m");

    let answer = send(&client, "GET", &server.url("/hooks/lab"), &event)
        .await
        .unwrap();
    assert_eq!((answer.status, answer.error()), (405, "method".into()));
    assert_eq!(answer.headers["allow"], "POST");

    let answer = post(&client, &server.url("/hooks/nowhere"), &event).await;
    assert_eq!((answer.status, answer.error()), (404, "not_found".into()));

    let mut xml = event.clone();
    xml.headers.retain(|(n, _)| n != "content-type");
    xml.headers
        .push(("content-type".into(), "application/xml".into()));
    let answer = post(&client, &server.url("/hooks/lab"), &xml).await;
    assert_eq!(
        (answer.status, answer.error()),
        (415, "content_type".into())
    );

    let mut charset = event.clone();
    charset.headers.retain(|(n, _)| n != "content-type");
    charset.headers.push((
        "content-type".into(),
        "application/json; charset=utf-8".into(),
    ));
    assert_eq!(
        post(&client, &server.url("/hooks/lab"), &charset)
            .await
            .status,
        200
    );
}

async fn unsupported_type_is_acknowledged_and_not_stored(backend: Backend) {
    let extra = r#"
[[endpoint]]
id = "picky"
provider = "lab"
event_types = ["invoice.*"]
[[endpoint.secret]]
version = "v1"
value = "lab-test-secret-0001"
"#;
    let (storage, server) = start(backend, extra);
    let client = client();
    let ignored = lab_signed(r#"{"id":"e1","type":"customer.created"}"#, now());
    let answer = post(&client, &server.url("/hooks/picky"), &ignored).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json()["ignored"], true);
    let taken = lab_signed(r#"{"id":"e2","type":"invoice.paid"}"#, now());
    assert_eq!(
        post(&client, &server.url("/hooks/picky"), &taken)
            .await
            .status,
        200
    );
    let rows = stored(&storage).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].2, "e2");
}

async fn rate_limit_answers_429_with_retry_after(backend: Backend) {
    let extra = r#"
[[endpoint]]
id = "slow"
provider = "lab"
rate_limit = { per_second = 1, burst = 2 }
[[endpoint.secret]]
version = "v1"
value = "lab-test-secret-0001"
"#;
    let (_storage, server) = start(backend, extra);
    let client = client();
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for n in 0..5 {
        let answer = post(
            &client,
            &server.url("/hooks/slow"),
            &lab_event(&format!("r{n}")),
        )
        .await;
        if answer.status == 429 {
            assert_eq!(answer.error(), "rate_limited");
            retry_after = answer.headers.get("retry-after").cloned();
        }
        statuses.push(answer.status);
    }
    assert_eq!(&statuses[..2], &[200, 200]);
    assert!(statuses[2..].contains(&429), "{statuses:?}");
    let seconds: u64 = retry_after.unwrap().to_str().unwrap().parse().unwrap();
    assert!(seconds >= 1);
    // Other endpoints are not limited by it.
    assert_eq!(
        post(&client, &server.url("/hooks/lab"), &lab_event("free"))
            .await
            .status,
        200
    );
}

/// Reads one HTTP response head from a raw socket.
fn read_head(stream: &mut TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(0) => break,
            Ok(_) => head.push(byte[0]),
            Err(e) => panic!("no response: {e}"),
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

async fn declared_oversize_is_refused_before_the_body_is_sent(backend: Backend) {
    let (_storage, server) = start(backend, "");
    let limit = 1024 * 1024;
    let mut stream = TcpStream::connect(server.addr).unwrap();
    let ts = now();
    // The head promises 1 MiB + 1 byte; not one byte of body is ever sent.
    write!(
        stream,
        "POST /hooks/lab HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Timestamp: {ts}\r\nX-Signature: 00\r\nContent-Length: {}\r\n\r\n",
        limit + 1
    )
    .unwrap();
    let started = Instant::now();
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

async fn streamed_oversize_is_cut_off_at_the_limit(backend: Backend) {
    let (storage, server) = start(backend, "");
    let limit = 1024 * 1024;
    let mut stream = TcpStream::connect(server.addr).unwrap();
    let ts = now();
    write!(
        stream,
        "POST /hooks/lab HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Timestamp: {ts}\r\nX-Signature: 00\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .unwrap();
    // Chunks of 64 KiB up to one byte past the limit; the server may stop reading early.
    let chunk = vec![b'a'; 64 * 1024];
    let mut sent = 0;
    while sent <= limit {
        let n = chunk.len().min(limit + 1 - sent);
        if write!(stream, "{n:x}\r\n").is_err()
            || stream.write_all(&chunk[..n]).is_err()
            || stream.write_all(b"\r\n").is_err()
        {
            break;
        }
        sent += n;
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert!(storage.events().await.is_empty());

    // Exactly at the limit is fine: a signed 1 MiB body is accepted.
    let pad = "p".repeat(limit - 40);
    let body = format!(r#"{{"id":"big","pad":"{pad}"}}"#);
    let body = &body[..];
    assert!(body.len() <= limit);
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_signed(body, now()),
    )
    .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
}

/// Hyper answers these before the router runs, with an empty body (the
/// one row of docs/architecture.md §2 the router tests cannot reach). Each request is
/// written whole before the server can answer, and the server reads all of
/// it: it then closes a connection with nothing unread, so the answer is
/// not lost to a reset.
async fn too_many_header_fields_or_too_large_a_head_is_431(backend: Backend) {
    let (_storage, server) = start(backend, "[server]\nmax_headers = 8\n");
    let fields: String = (0..8).map(|n| format!("X-Field-{n}: {n}\r\n")).collect();
    let ten_fields =
        format!("POST /hooks/lab HTTP/1.1\r\nHost: x\r\n{fields}Content-Length: 0\r\n\r\n");
    // 16 KiB (`max_header_bytes`) of a head that has not ended.
    let mut full_head = "POST /hooks/lab HTTP/1.1\r\nHost: x\r\nX-Long: ".to_owned();
    full_head.push_str(&"a".repeat(16 * 1024 - full_head.len()));
    for request in [ten_fields, full_head] {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let head = read_head(&mut stream);
        assert!(head.starts_with("HTTP/1.1 431"), "{head}");
    }
}

/// SQLite's own lock; PostgreSQL's lost connection is in `postgres_processes.rs`.
#[tokio::test]
async fn locked_storage_answers_503_with_retry_after_then_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(
        dir.path(),
        &TestConfig::new(&db)
            .storage("busy_timeout = \"300ms\"")
            .to_string(),
    );
    let client = client();
    assert_eq!(
        post(&client, &server.url("/hooks/lab"), &lab_event("before"))
            .await
            .status,
        200
    );

    // Another process holds the write lock: the commit cannot happen.
    let blocker = rusqlite::Connection::open(&db).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let answer = post(&client, &server.url("/hooks/lab"), &lab_event("during")).await;
    assert_eq!((answer.status, answer.error()), (503, "unavailable".into()));
    assert!(answer.headers.contains_key("retry-after"));
    blocker.execute_batch("ROLLBACK").unwrap();
    drop(blocker);

    // The provider's retry then succeeds; nothing accepted before was lost.
    assert_eq!(
        post(&client, &server.url("/hooks/lab"), &lab_event("during"))
            .await
            .status,
        200
    );
    let ids: Vec<String> = inbox_rows(&db).into_iter().map(|r| r.2).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&"before".to_owned()) && ids.contains(&"during".to_owned()));
}

async fn generic_hmac_endpoint_is_configured_from_the_file(backend: Backend) {
    // A sender without a dedicated adapter: `X-Sig: sha256=<hex HMAC of "{ts}.{body}">`,
    // timestamp in `X-Ts`, event id at `/id`.
    let extra = r#"
[[endpoint]]
id = "acme"
provider = "generic_hmac"
[endpoint.generic_hmac]
signature_header = "X-Sig"
signature_prefix = "sha256="
signed_content = "{timestamp}.{body}"
timestamp_header = "X-Ts"
id_pointer = "/id"
type_pointer = "/kind"
[[endpoint.secret]]
version = "acme-1"
value = "acme-secret-0000001"
"#;
    let (storage, server) = start(backend, extra);
    let body = r#"{"id":"acme-1","kind":"widget.made"}"#;
    let ts = now();
    let signed = |ts: i64, secret: &str| Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-ts".into(), ts.to_string()),
            (
                "x-sig".into(),
                format!(
                    "sha256={}",
                    hookinbox_verify::providers::lab::sign(secret, ts, body.as_bytes())
                ),
            ),
        ],
        body: body.into(),
    };
    let client = client();
    let url = server.url("/hooks/acme");
    assert_eq!(
        post(&client, &url, &signed(ts, "acme-secret-0000001"))
            .await
            .status,
        200
    );
    assert_eq!(
        post(&client, &url, &signed(ts, "other")).await.error(),
        "signature"
    );
    assert_eq!(
        post(&client, &url, &signed(ts - 400, "acme-secret-0000001"))
            .await
            .error(),
        "timestamp"
    );
    let events = storage.events().await;
    assert_eq!(events.len(), 1);
    let (detail, _) = storage.event(&events[0].id).await;
    assert_eq!(
        (
            detail.summary.provider_event_id.as_str(),
            detail.summary.event_type.as_deref(),
            detail.matched_secret_version.as_str()
        ),
        ("acme-1", Some("widget.made"), "acme-1")
    );
}

async fn a_flood_of_bad_signatures_is_refused_without_a_log_line_each(backend: Backend) {
    // Every forged request is answered 401 here, not cut off by the
    // per-client limit (tested on its own in `public_limits.rs`).
    let (_storage, server) = start(
        backend,
        "[server]\nunverified_rate_limit = { per_second = 1000, burst = 1000 }",
    );
    let client = client();
    let url = server.url("/hooks/lab");
    let mut forged = lab_event("evt_forged");
    forged.headers.retain(|(n, _)| n != "x-signature");
    forged.headers.push(("x-signature".into(), "00".repeat(32)));
    let started = Instant::now();
    for _ in 0..300 {
        let answer = post(&client, &url, &forged).await;
        assert_eq!((answer.status, answer.error()), (401, "signature".into()));
    }
    // A burst of 20 lines, then 5 a second (`refusal_log`'s own tests step
    // through that budget on a fake clock).
    let allowed = 20 + (5.0 * started.elapsed().as_secs_f64()).ceil() as usize + 1;
    let lines = |logs: &str| logs.matches("Refused a request.").count();
    let mut markers = 0;
    all_lines_written(&server, &client, &mut markers).await;
    let flood_lines = lines(&server.logs());
    assert!(
        (1..=allowed).contains(&flood_lines),
        "{flood_lines} log lines for 300 refusals (at most {allowed})"
    );
    // The next line that goes out says how many were not logged. Refusals
    // go on, paced as a sender would, until that line is written: then
    // none is left unaccounted for.
    let mut refused = 300;
    let gave_up = Instant::now() + Duration::from_secs(10);
    while lines(&server.logs()) == flood_lines {
        assert!(Instant::now() < gave_up, "no further line in 10 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let answer = post(&client, &url, &forged).await;
        assert_eq!(answer.status, 401);
        refused += 1;
        all_lines_written(&server, &client, &mut markers).await;
    }
    let logs = server.logs();
    let suppressed: usize = logs
        .split("suppressed_since_last_line=")
        .skip(1)
        .map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<usize>().expect("a count")
        })
        .sum();
    assert_eq!(lines(&logs), flood_lines + 1, "{logs}");
    assert_eq!(
        lines(&logs) + suppressed,
        refused,
        "every refusal is a line or counted in one: {logs}"
    );
}

/// Posts a valid event and waits for its line. The log's own thread
/// writes lines in order, so every line logged before it is out too.
async fn all_lines_written(server: &Server, client: &HttpClient, markers: &mut usize) {
    *markers += 1;
    let id = format!("evt_marker_{markers}");
    let answer = post(client, &server.url("/hooks/lab"), &lab_event(&id)).await;
    assert_eq!(answer.status, 200);
    let needle = format!("event_id={id} ");
    let out = eventually(Duration::from_secs(5), || server.logs().contains(&needle)).await;
    assert!(out, "the line of {id} was not written");
}

const MAILGUN_KEY: &str = "mailgun-signing-key";

/// `config` with a Mailgun endpoint (`/hooks/mailgun`, `endpoint[1]`)
/// with `basic_auth` TOML, if any.
fn with_mailgun(config: TestConfig, basic_auth: &str) -> String {
    config
        .endpoint("mailgun", "mailgun", basic_auth, MAILGUN_KEY)
        .to_string()
}

#[test]
fn a_mailgun_endpoint_without_basic_auth_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookinbox.toml");
    let db = dir.path().join("inbox.db");
    std::fs::write(&config, with_mailgun(TestConfig::new(&db), "")).unwrap();
    let (code, stderr) = serve_refused(&config, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("endpoint[1].basic_auth") && stderr.contains("does not cover the body"),
        "{stderr}"
    );
}

async fn basic_auth_is_required_beside_the_signature(backend: Backend) {
    let storage = Storage::new(backend);
    let dir = storage.dir.path();
    std::fs::write(dir.join("mailgun-hook-password"), "hook-password\n").unwrap();
    let basic_auth =
        r#"basic_auth = { username = "mailgun", password_file = "mailgun-hook-password" }"#;
    let server = Server::start(dir, &with_mailgun(storage.config(), basic_auth));
    let client = client();
    let url = server.url("/hooks/mailgun");
    let token = "a".repeat(50);

    let none = post(&client, &url, &mailgun_signed(MAILGUN_KEY, &token, None)).await;
    assert_eq!(
        (none.status, none.error()),
        (401, "missing_signature".into())
    );
    let bearer = post(
        &client,
        &url,
        &mailgun_signed(MAILGUN_KEY, &token, Some("Bearer x")),
    )
    .await;
    assert_eq!(
        (bearer.status, bearer.error()),
        (401, "missing_signature".into())
    );
    let wrong = basic("mailgun:not-the-password");
    let wrong = post(
        &client,
        &url,
        &mailgun_signed(MAILGUN_KEY, &token, Some(&wrong)),
    )
    .await;
    assert_eq!((wrong.status, wrong.error()), (401, "signature".into()));
    assert!(
        storage.events().await.is_empty(),
        "nothing stored before the 200"
    );

    let right = basic("mailgun:hook-password");
    let accepted = post(
        &client,
        &url,
        &mailgun_signed(MAILGUN_KEY, &token, Some(&right)),
    )
    .await;
    assert_eq!(accepted.status, 200, "{:?}", accepted.body);
    assert_eq!(accepted.json()["duplicate"], false);
    let rows = stored(&storage).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].2, token);

    // The credential is neither stored with the event nor logged.
    let audit = storage
        .reads()
        .await
        .audit_headers(&rows[0].0)
        .await
        .unwrap()
        .expect("the event's audit headers");
    assert!(
        audit
            .iter()
            .all(|(name, value)| !name.eq_ignore_ascii_case("authorization")
                && !value.contains("hook-password")),
        "{audit:?}"
    );
    assert!(!server.logs().contains("hook-password"));
    assert!(!server.logs().contains(right.trim_start_matches("Basic ")));
}
