//! The response contract (docs/architecture.md §2) at the
//! router: every situation of the table sent through `oneshot`, with no
//! process and no port, and the exact answer checked — status, the
//! `Retry-After`, `Allow` and `Connection: close` headers, and the body
//! byte for byte. The state is built from a configuration as `serve`
//! builds it, over a SQLite store in a temporary directory, or over a
//! store that fails or stalls for the 503s.
//!
//! The black-box tests (`tests/it/contract.rs`) check the same answers over
//! real HTTP against the binary. The 431 for an oversized head is not
//! here: hyper answers it before the router runs (`tests/it/public_limits.rs`).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, Request};
use axum::Router;
use bytes::Bytes;
use futures::StreamExt;
use hookinbox_store::{
    AcceptOutcome, LeaseParams, LeasedDelivery, NewEvent, ReplaySelector, Settlement, Stats, Store,
    StoreError, StoredEvent,
};
use hookinbox_testing::{
    basic, github_signed, inbox_rows, lab_signed, mailgun_signed, now, Signed, TestConfig,
    LAB_SECRET,
};
use tower::ServiceExt;

use crate::app_state::AppState;
use crate::{config, endpoint};

/// Every `error` a refusal can carry (docs/architecture.md §2): the rows below must
/// produce each of them.
const REASONS: [&str; 14] = [
    "missing_signature",
    "malformed_signature",
    "signature",
    "timestamp",
    "missing_event_id",
    "malformed_body",
    "conflict",
    "too_large",
    "content_type",
    "method",
    "not_found",
    "timeout",
    "rate_limited",
    "unavailable",
];

/// The default `max_body_bytes` of an endpoint.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The TCP peer of every request, as the server would attach it.
const PEER: &str = "192.0.2.10:40000";

/// What the service stores with.
#[derive(Clone, Copy)]
enum Backend {
    /// The SQLite store, in a temporary directory.
    Sqlite,
    /// A store whose commits go wrong.
    Fake(FakeStore),
}

/// The public router over a configuration: the `lab` endpoint plus what a
/// test adds.
struct Ingress {
    router: Router,
    db: PathBuf,
    _dir: tempfile::TempDir,
}

impl Ingress {
    /// The router over the `lab` endpoint and what `adjust` adds to its
    /// configuration, storing in a new temporary directory.
    fn start(adjust: fn(TestConfig) -> TestConfig, backend: Backend) -> Ingress {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = dir.path().join("inbox.db");
        let text = adjust(TestConfig::new(&db)).to_string();
        let settings = config::parse(&text, dir.path()).expect("a valid configuration");
        let endpoints = endpoint::build_all(&settings).expect("the endpoints");
        let store: Arc<dyn Store> = match backend {
            Backend::Sqlite => Arc::new(
                hookinbox_store::SqliteStore::open(hookinbox_store::SqliteOptions::new(&db))
                    .expect("the store"),
            ),
            Backend::Fake(fake) => Arc::new(fake),
        };
        let state = AppState::new(
            endpoints,
            store,
            &settings.server,
            settings.storage.commit_timeout,
        );
        Ingress {
            router: super::router(state),
            db,
            _dir: dir,
        }
    }

    async fn answer(&self, request: Sent) -> Answer {
        let response = self
            .router
            .clone()
            .oneshot(request.into_request())
            .await
            .expect("the router answers every request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("a body");
        Answer {
            status,
            headers,
            body,
        }
    }

    /// The provider event ids stored, by inbox id.
    fn stored(&self) -> Vec<(String, String)> {
        if !self.db.exists() {
            return Vec::new();
        }
        inbox_rows(&self.db)
            .into_iter()
            .map(|(id, _, event_id)| (id, event_id))
            .collect()
    }
}

/// The configuration as [`TestConfig::new`] makes it.
fn as_is(config: TestConfig) -> TestConfig {
    config
}

#[derive(Debug)]
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("a UTF-8 body")
    }
}

/// A request as a client sends it, body included.
#[derive(Clone)]
struct Sent {
    method: &'static str,
    path: String,
    headers: Vec<(String, String)>,
    body: SentBody,
}

#[derive(Clone)]
enum SentBody {
    /// The whole body, its length declared.
    Whole(Bytes),
    /// The whole body in pieces, its length not declared (chunked).
    Undeclared(Bytes),
    /// `declared` bytes announced, `sent` sent, then nothing more.
    Stalled { declared: u64, sent: Bytes },
    /// `declared` bytes announced, `sent` sent, then the client is gone.
    CutShort { declared: u64, sent: Bytes },
}

impl Sent {
    fn post(path: &str, signed: &Signed) -> Sent {
        Sent {
            method: "POST",
            path: path.to_owned(),
            headers: signed.headers.clone(),
            body: SentBody::Whole(signed.body.clone()),
        }
    }

    fn get(path: &str) -> Sent {
        Sent {
            method: "GET",
            path: path.to_owned(),
            headers: Vec::new(),
            body: SentBody::Whole(Bytes::new()),
        }
    }

    fn lab(signed: &Signed) -> Sent {
        Sent::post("/hooks/lab", signed)
    }

    fn method(self, method: &'static str) -> Sent {
        Sent { method, ..self }
    }

    fn body(self, body: SentBody) -> Sent {
        Sent { body, ..self }
    }

    fn into_request(self) -> Request<Body> {
        let mut request = Request::builder().method(self.method).uri(&self.path);
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        let (declared, body) = match self.body {
            SentBody::Whole(bytes) => (Some(bytes.len() as u64), Body::from(bytes)),
            SentBody::Undeclared(bytes) => {
                let pieces: Vec<Result<Bytes, std::io::Error>> = bytes
                    .chunks(64 * 1024)
                    .map(|piece| Ok(Bytes::copy_from_slice(piece)))
                    .collect();
                (None, Body::from_stream(futures::stream::iter(pieces)))
            }
            SentBody::Stalled { declared, sent } => {
                let then_nothing = futures::stream::iter([Ok::<_, std::io::Error>(sent)])
                    .chain(futures::stream::pending());
                (Some(declared), Body::from_stream(then_nothing))
            }
            SentBody::CutShort { declared, sent } => {
                let gone = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "gone");
                let then_gone = futures::stream::iter([Ok(sent), Err(gone)]);
                (Some(declared), Body::from_stream(then_gone))
            }
        };
        if let Some(length) = declared {
            request = request.header(header::CONTENT_LENGTH, length);
        }
        let mut request = request.body(body).expect("a request the test described");
        let peer: SocketAddr = PEER.parse().expect("an address");
        request.extensions_mut().insert(ConnectInfo(peer));
        request
    }
}

/// A `payment.succeeded` event for the `lab` endpoint, signed now.
fn event(id: &str, amount: i64) -> Signed {
    lab_signed(
        format!(r#"{{"id":"{id}","type":"payment.succeeded","amount":{amount}}}"#),
        now(),
    )
}

/// One situation of the table, refused.
struct Row {
    situation: &'static str,
    config: fn(TestConfig) -> TestConfig,
    backend: Backend,
    /// Sent first, so that `request` meets the situation.
    before: Vec<Sent>,
    request: Sent,
    status: u16,
    reason: &'static str,
    retry_after: Option<&'static str>,
    allow: Option<&'static str>,
    /// Whether the answer closes the connection; `None`: not part of the
    /// contract for this situation.
    closes: Option<bool>,
}

impl Row {
    fn new(situation: &'static str, request: Sent, status: u16, reason: &'static str) -> Row {
        Row {
            situation,
            config: as_is,
            backend: Backend::Sqlite,
            before: Vec::new(),
            request,
            status,
            reason,
            retry_after: None,
            allow: None,
            closes: Some(false),
        }
    }

    fn config(self, config: fn(TestConfig) -> TestConfig) -> Row {
        Row { config, ..self }
    }

    fn backend(self, backend: Backend) -> Row {
        Row { backend, ..self }
    }

    fn after(self, before: Vec<Sent>) -> Row {
        Row { before, ..self }
    }

    fn retry_after(self, seconds: &'static str) -> Row {
        Row {
            retry_after: Some(seconds),
            ..self
        }
    }

    fn allow(self, methods: &'static str) -> Row {
        Row {
            allow: Some(methods),
            ..self
        }
    }

    /// Answered before the body was read to its end: the answer closes the
    /// connection (after draining what is on its way).
    fn closes(self) -> Row {
        Row {
            closes: Some(true),
            ..self
        }
    }
}

const MAILGUN_KEY: &str = "mailgun-signing-key";

/// A Mailgun endpoint (`/hooks/mailgun`) that wants basic credentials
/// `mailgun:hook-password` beside the signature.
fn with_mailgun(config: TestConfig) -> TestConfig {
    let basic_auth = r#"basic_auth = { username = "mailgun", password = "hook-password" }"#;
    config.endpoint("mailgun", "mailgun", basic_auth, MAILGUN_KEY)
}

/// An endpoint `retired` whose one secret version ([`LAB_SECRET`]) left its
/// window long ago, and none took its place.
fn with_retired_endpoint(config: TestConfig) -> TestConfig {
    config.extra(&format!(
        r#"
[[endpoint]]
id = "retired"
provider = "lab"
[[endpoint.secret]]
version = "old"
value = "{LAB_SECRET}"
not_after = 1000"#
    ))
}

/// An endpoint `slow` whose token bucket holds one event a second.
fn with_slow_endpoint(config: TestConfig) -> TestConfig {
    let rate_limit = "rate_limit = { per_second = 1, burst = 1 }";
    config.endpoint("slow", "lab", rate_limit, LAB_SECRET)
}

fn refusals() -> Vec<Row> {
    let ts = now();
    let body = r#"{"id":"evt_r","type":"payment.succeeded","amount":1}"#;
    let good = lab_signed(body, ts);
    let forged = good.clone().with("x-signature", &"00".repeat(32));
    let signed_elsewhere = good.clone().with(
        "x-signature",
        &hookinbox_verify::providers::lab::sign("another-secret", ts, body.as_bytes()),
    );
    let token = "a".repeat(50);
    vec![
        Row::new(
            "signature header missing",
            Sent::lab(&good.clone().without("x-signature")),
            401,
            "missing_signature",
        ),
        Row::new(
            "signature header unparseable",
            Sent::lab(&good.clone().with("x-signature", "not-hex")),
            401,
            "malformed_signature",
        ),
        Row::new(
            "no secret version produced the signature",
            Sent::lab(&signed_elsewhere),
            401,
            "signature",
        ),
        Row::new(
            "signed timestamp malformed",
            Sent::lab(&good.clone().with("x-timestamp", &format!("{ts}.0"))),
            401,
            "timestamp",
        ),
        Row::new(
            "signed timestamp too old",
            Sent::lab(&lab_signed(body, ts - 301)),
            401,
            "timestamp",
        ),
        // Beyond the 300 s tolerance by a margin: the service reads its
        // clock after the test read its own, maybe a second later (the
        // boundary itself is `freshness`'s unit test, on a given clock).
        Row::new(
            "signed timestamp too far in the future",
            Sent::lab(&lab_signed(body, ts + 310)),
            401,
            "timestamp",
        ),
        Row::new(
            "basic_auth endpoint, no basic credentials",
            Sent::post("/hooks/mailgun", &mailgun_signed(MAILGUN_KEY, &token, None)),
            401,
            "missing_signature",
        )
        .config(with_mailgun),
        Row::new(
            "basic_auth endpoint, wrong credentials",
            Sent::post(
                "/hooks/mailgun",
                &mailgun_signed(MAILGUN_KEY, &token, Some(&basic("mailgun:guess"))),
            ),
            401,
            "signature",
        )
        .config(with_mailgun),
        Row::new(
            "verified body without an event id",
            Sent::lab(&lab_signed(r#"{"amount":1}"#, ts)),
            400,
            "missing_event_id",
        ),
        Row::new(
            "verified body that is not the envelope (not JSON)",
            Sent::lab(&lab_signed("id=1", ts)),
            400,
            "malformed_body",
        ),
        Row::new(
            "body ended before its declared length",
            Sent::lab(&good).body(SentBody::CutShort {
                declared: body.len() as u64,
                sent: Bytes::from_static(b"{\"id\":"),
            }),
            400,
            "malformed_body",
        )
        .closes(),
        Row::new(
            "body too slow for the pace rule",
            Sent::lab(&good).body(SentBody::Stalled {
                declared: body.len() as u64,
                sent: Bytes::from_static(b"{\"id\":"),
            }),
            408,
            "timeout",
        )
        .config(|config| config.extra("[server]\nbody_rate_grace = \"10ms\""))
        .closes(),
        Row::new(
            "declared body larger than max_body_bytes",
            Sent::lab(&good).body(SentBody::Stalled {
                declared: MAX_BODY_BYTES as u64 + 1,
                sent: Bytes::new(),
            }),
            413,
            "too_large",
        )
        .closes(),
        Row::new(
            "streamed body larger than max_body_bytes",
            Sent::lab(&good).body(SentBody::Undeclared(Bytes::from(vec![
                b'x';
                MAX_BODY_BYTES + 1
            ]))),
            413,
            "too_large",
        )
        .closes(),
        Row::new(
            "media type not allowed",
            Sent::lab(&good.clone().with("content-type", "application/xml")),
            415,
            "content_type",
        )
        .closes(),
        Row::new("not POST", Sent::lab(&good).method("GET"), 405, "method")
            .allow("POST")
            .closes(),
        Row::new(
            "unknown endpoint id",
            Sent::post("/hooks/nowhere", &good),
            404,
            "not_found",
        )
        .closes(),
        Row::new(
            "a path other than /hooks/… and /healthz",
            Sent::post("/elsewhere", &good),
            404,
            "not_found",
        )
        .closes(),
        Row::new(
            "an endpoint id that is not UTF-8 once decoded",
            Sent::post("/hooks/%FF", &good),
            404,
            "not_found",
        )
        .closes(),
        Row::new(
            "a method other than GET on /healthz",
            Sent::post("/healthz", &good),
            405,
            "method",
        )
        .allow("GET, HEAD")
        .closes(),
        Row::new(
            "the client has spent its refusals on paths outside /hooks",
            Sent::lab(&good),
            429,
            "rate_limited",
        )
        .config(|config| {
            config.extra("[server]\nunverified_rate_limit = { per_second = 1, burst = 1 }")
        })
        .after(vec![Sent::post("/hooks/%FF", &good), Sent::get("/elsewhere")])
        .retry_after("1")
        .closes(),
        Row::new(
            "the client has spent its refusals",
            Sent::lab(&good),
            429,
            "rate_limited",
        )
        .config(|config| {
            config.extra("[server]\nunverified_rate_limit = { per_second = 1, burst = 1 }")
        })
        .after(vec![Sent::lab(&forged), Sent::lab(&forged)])
        .retry_after("1")
        .closes(),
        Row::new(
            "the endpoint's token bucket is empty",
            Sent::post("/hooks/slow", &event("evt_slow_2", 1)),
            429,
            "rate_limited",
        )
        .config(with_slow_endpoint)
        .after(vec![Sent::post("/hooks/slow", &event("evt_slow_1", 1))])
        .retry_after("1"),
        Row::new(
            "same endpoint and event id, different body",
            Sent::lab(&event("evt_c", 2)),
            409,
            "conflict",
        )
        .after(vec![Sent::lab(&event("evt_c", 1))]),
        Row::new(
            "the in-flight body budget is spent",
            Sent::lab(&good),
            503,
            "unavailable",
        )
        .config(|config| config.extra("[server]\nmax_inflight_body_bytes = 16"))
        .retry_after("1")
        .closes(),
        Row::new("commit queue full", Sent::lab(&good), 503, "unavailable")
            .backend(Backend::Fake(FakeStore::Failing(|| StoreError::Overloaded)))
            .retry_after("1"),
        Row::new(
            "commit not finished within storage.commit_timeout",
            Sent::lab(&good),
            503,
            "unavailable",
        )
        .config(|config| config.storage("commit_timeout = \"10ms\""))
        .backend(Backend::Fake(FakeStore::Stalling))
        .retry_after("5"),
        Row::new(
            "storage error (I/O, disk full, lock held, failed COMMIT)",
            Sent::lab(&good),
            503,
            "unavailable",
        )
        .backend(Backend::Fake(FakeStore::Failing(|| {
            StoreError::Unavailable("disk I/O error".into())
        })))
        .retry_after("5"),
        Row::new(
            "no secret version of the endpoint inside its window, request signed with the retired one",
            Sent::post("/hooks/retired", &good),
            503,
            "unavailable",
        )
        .config(with_retired_endpoint)
        .retry_after("60"),
        Row::new(
            "no secret version of the endpoint inside its window, unsigned request",
            Sent::post("/hooks/retired", &good.clone().without("x-signature")),
            503,
            "unavailable",
        )
        .config(with_retired_endpoint)
        .retry_after("60"),
        Row::new("writer stopped", Sent::lab(&good), 503, "unavailable")
            .backend(Backend::Fake(FakeStore::Failing(|| StoreError::Stopped)))
            .retry_after("5"),
    ]
}

#[tokio::test]
async fn every_refusal_of_the_table_is_answered_exactly() {
    let mut reasons = BTreeSet::new();
    for row in refusals() {
        let situation = row.situation;
        let ingress = Ingress::start(row.config, row.backend);
        let mut accepted_before = 0;
        for request in row.before {
            if ingress.answer(request).await.status == 200 {
                accepted_before += 1;
            }
        }
        let answer = ingress.answer(row.request).await;
        assert_eq!(answer.status, row.status, "{situation}: {answer:?}");
        assert_eq!(
            answer.text(),
            format!("{{\"accepted\":false,\"error\":\"{}\"}}\n", row.reason),
            "{situation}"
        );
        assert_eq!(
            answer.header(header::CONTENT_TYPE),
            Some("application/json"),
            "{situation}"
        );
        assert_eq!(
            answer.header(header::RETRY_AFTER),
            row.retry_after,
            "{situation}"
        );
        assert_eq!(answer.header(header::ALLOW), row.allow, "{situation}");
        if let Some(closes) = row.closes {
            let close = answer.header(header::CONNECTION) == Some("close");
            assert_eq!(close, closes, "{situation}: Connection: close");
        }
        assert_eq!(
            ingress.stored().len(),
            accepted_before,
            "{situation}: a refused request stores nothing"
        );
        reasons.insert(row.reason);
    }
    assert_eq!(reasons, BTreeSet::from(REASONS), "the closed set, each one");
}

#[tokio::test]
async fn a_new_event_then_its_copy_are_acknowledged_with_the_inbox_id() {
    let ingress = Ingress::start(as_is, Backend::Sqlite);
    let new = ingress.answer(Sent::lab(&event("evt_new", 5))).await;
    let stored = ingress.stored();
    let [(inbox_id, event_id)] = &stored[..] else {
        panic!("one row: {stored:?}")
    };
    assert_eq!(event_id, "evt_new");
    assert_eq!(new.status, 200);
    assert_eq!(
        new.text(),
        format!("{{\"accepted\":true,\"duplicate\":false,\"id\":\"{inbox_id}\"}}\n")
    );
    assert_eq!(new.header(header::CONTENT_TYPE), Some("application/json"));
    assert_eq!(new.header(header::CONNECTION), None, "the connection stays");

    let copy = ingress.answer(Sent::lab(&event("evt_new", 5))).await;
    assert_eq!(copy.status, 200);
    assert_eq!(
        copy.text(),
        format!("{{\"accepted\":true,\"duplicate\":true,\"id\":\"{inbox_id}\"}}\n")
    );
    assert_eq!(ingress.stored().len(), 1);
}

const GITHUB_SECRET: &str = "github-test-secret";

#[tokio::test]
async fn an_unsigned_id_resent_under_a_new_one_is_the_first_events_duplicate() {
    let with_github = |config: TestConfig| config.endpoint("github", "github", "", GITHUB_SECRET);
    let ingress = Ingress::start(with_github, Backend::Sqlite);
    let body = r#"{"action":"opened","issue":{"number":1}}"#;
    let first = ingress
        .answer(Sent::post(
            "/hooks/github",
            &github_signed(GITHUB_SECRET, body, "delivery-1"),
        ))
        .await;
    assert_eq!(first.status, 200);
    let again = ingress
        .answer(Sent::post(
            "/hooks/github",
            &github_signed(GITHUB_SECRET, body, "delivery-2"),
        ))
        .await;
    let stored = ingress.stored();
    let [(inbox_id, event_id)] = &stored[..] else {
        panic!("one row: {stored:?}")
    };
    assert_eq!(event_id, "delivery-1");
    assert_eq!(again.status, 200);
    assert_eq!(
        again.text(),
        format!("{{\"accepted\":true,\"duplicate\":true,\"id\":\"{inbox_id}\"}}\n")
    );
}

#[tokio::test]
async fn an_event_type_the_endpoint_does_not_take_is_acknowledged_and_not_stored() {
    let with_picky = |config: TestConfig| {
        config.endpoint("picky", "lab", r#"event_types = ["invoice.*"]"#, LAB_SECRET)
    };
    let ingress = Ingress::start(with_picky, Backend::Sqlite);
    let answer = ingress
        .answer(Sent::post("/hooks/picky", &event("evt_ignored", 1)))
        .await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.text(),
        "{\"accepted\":false,\"ignored\":true,\"reason\":\"unsupported_type\"}\n"
    );
    assert!(ingress.stored().is_empty());
}

const SLACK_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

#[tokio::test]
async fn a_verified_handshake_gets_the_providers_reply_and_is_not_stored() {
    let with_slack = |config: TestConfig| config.endpoint("slack", "slack", "", SLACK_SECRET);
    let ingress = Ingress::start(with_slack, Backend::Sqlite);
    let body = r#"{"token":"x","challenge":"3eZbrw1a","type":"url_verification"}"#;
    let ts = now();
    let handshake = Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-slack-request-timestamp".into(), ts.to_string()),
            (
                "x-slack-signature".into(),
                hookinbox_verify::providers::slack::sign(SLACK_SECRET, ts, body.as_bytes()),
            ),
        ],
        body: body.into(),
    };
    let answer = ingress.answer(Sent::post("/hooks/slack", &handshake)).await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.header(header::CONTENT_TYPE),
        Some("application/json")
    );
    assert_eq!(answer.text(), "{\"challenge\":\"3eZbrw1a\"}");
    assert!(ingress.stored().is_empty());
}

#[tokio::test]
async fn the_liveness_probe_answers_ok() {
    let ingress = Ingress::start(as_is, Backend::Sqlite);
    let answer = ingress.answer(Sent::get("/healthz")).await;
    assert_eq!((answer.status, answer.text()), (200, "ok"));
}

/// A store whose commits go wrong; ingress asks it for nothing else.
#[derive(Clone, Copy)]
enum FakeStore {
    /// Every commit fails with this error.
    Failing(fn() -> StoreError),
    /// No commit ever returns: a frozen disk.
    Stalling,
}

/// What ingress never asks of a store.
fn not_ingress() -> StoreError {
    StoreError::Unavailable("not used by ingress".into())
}

#[async_trait]
impl Store for FakeStore {
    async fn accept(&self, _: NewEvent) -> Result<AcceptOutcome, StoreError> {
        match self {
            FakeStore::Failing(error) => Err(error()),
            FakeStore::Stalling => std::future::pending().await,
        }
    }
    async fn lease(&self, _: LeaseParams) -> Result<Vec<LeasedDelivery>, StoreError> {
        Err(not_ingress())
    }
    async fn heartbeat(&self, _: &LeasedDelivery, _: i64) -> Result<bool, StoreError> {
        Err(not_ingress())
    }
    async fn settle(&self, _: &LeasedDelivery, _: Settlement, _: i64) -> Result<bool, StoreError> {
        Err(not_ingress())
    }
    async fn reclaim_expired(&self, _: i64) -> Result<u64, StoreError> {
        Err(not_ingress())
    }
    async fn replay(&self, _: ReplaySelector, _: i64) -> Result<Vec<String>, StoreError> {
        Err(not_ingress())
    }
    async fn load_event(&self, _: &str) -> Result<Option<StoredEvent>, StoreError> {
        Err(not_ingress())
    }
    async fn stats(&self) -> Result<Stats, StoreError> {
        Err(not_ingress())
    }
}
