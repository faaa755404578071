//! The admin API and the dashboard at the router: the whole admin router
//! (the `Host` check, the token, the API, the dashboard's sign-in and CSRF)
//! driven with `oneshot` over a SQLite store in a temporary directory, the
//! events put there through the `Store` trait as ingress would. The
//! store's side of the same reads runs on both backends in
//! `hookinbox-store/tests/it/conformance.rs`; the binary over real HTTP, and on
//! PostgreSQL, in `tests/it/admin_api.rs`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request};
use axum::Router;
use base64::Engine;
use bytes::Bytes;
use hookinbox_store::{
    AcceptOutcome, Fingerprint, LeaseParams, NewEvent, Settlement, SqliteOptions, SqliteStore,
    Store, StoreReads, UnsignedMetadata,
};
use hookinbox_testing::TestConfig;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::host_allowlist::HostAllowlist;
use super::token::AdminToken;
use crate::config::{self, SecretSource};
use crate::endpoint;
use crate::secrets::key_reload::KeyReloader;

const TOKEN: &str = "admin-t0ken-for-router-tests";
const HOST: &str = "127.0.0.1:9090";

struct Admin {
    router: Router,
    store: Arc<SqliteStore>,
    reads: Arc<dyn StoreReads>,
    _dir: tempfile::TempDir,
}

#[derive(Debug)]
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|_| panic!("JSON: {}", String::from_utf8_lossy(&self.body)))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn header(&self, name: header::HeaderName) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

/// One request: method, path, headers, body.
struct Sent {
    method: Method,
    path: String,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Sent {
    fn get(path: &str) -> Sent {
        Sent {
            method: Method::GET,
            path: path.to_owned(),
            headers: vec![("host", HOST.to_owned())],
            body: Vec::new(),
        }
    }

    fn post(path: &str) -> Sent {
        Sent {
            method: Method::POST,
            ..Sent::get(path)
        }
    }

    fn bearer(self) -> Sent {
        self.header("authorization", &format!("Bearer {TOKEN}"))
    }

    fn header(mut self, name: &'static str, value: &str) -> Sent {
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value.to_owned()));
        self
    }

    fn json(self, body: Value) -> Sent {
        Sent {
            body: body.to_string().into_bytes(),
            ..self.header("content-type", "application/json")
        }
    }

    fn form(self, fields: &[(&str, &str)]) -> Sent {
        let body = serde_urlencoded::to_string(fields).unwrap();
        Sent {
            body: body.into_bytes(),
            ..self.header("content-type", "application/x-www-form-urlencoded")
        }
    }
}

impl Admin {
    fn start() -> Admin {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("inbox.db");
        let text = TestConfig::new(&db)
            .http_target("http://127.0.0.1:9/internal", "")
            .to_string();
        let settings = config::parse(&text, dir.path()).unwrap();
        let endpoints = endpoint::build_all(&settings).unwrap();
        let keys = Arc::new(KeyReloader::new(None, settings, endpoints));
        let store = Arc::new(SqliteStore::open(SqliteOptions::new(&db)).unwrap());
        let reads: Arc<dyn StoreReads> = Arc::new(store.open_reader().unwrap());
        let token = AdminToken::read(&SecretSource::Inline(TOKEN.into())).unwrap();
        let readiness = Arc::new(super::Readiness::new(
            Arc::clone(&store) as Arc<dyn Store>,
            Some(Arc::clone(&keys)),
        ));
        let router = super::router(
            None,
            Arc::clone(&store) as Arc<dyn Store>,
            readiness,
            Some(Arc::clone(&reads)),
            Some(token),
            HostAllowlist::new(9090, &[]),
            Some(keys),
        );
        Admin {
            router,
            store,
            reads,
            _dir: dir,
        }
    }

    async fn send(&self, sent: Sent) -> Answer {
        let mut request = Request::builder().method(sent.method).uri(&sent.path);
        for (name, value) in &sent.headers {
            request = request.header(*name, value);
        }
        let response = self
            .router
            .clone()
            .oneshot(request.body(Body::from(sent.body)).unwrap())
            .await
            .unwrap();
        Answer {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: axum::body::to_bytes(response.into_body(), 1 << 22)
                .await
                .unwrap(),
        }
    }

    /// Accepts an event on `lab` for target `sink`, received at `received_at_ms`.
    async fn accept(&self, event_id: &str, event_type: &str, received_at_ms: i64) -> String {
        self.accept_routed(event_id, event_type, received_at_ms, true)
            .await
    }

    /// As [`Admin::accept`]; routed to `sink` or, when not `routed`, to no target.
    async fn accept_routed(
        &self,
        event_id: &str,
        event_type: &str,
        received_at_ms: i64,
        routed: bool,
    ) -> String {
        self.insert(routed_event(event_id, event_type, received_at_ms, routed))
            .await
    }

    async fn insert(&self, event: NewEvent) -> String {
        match self.store.accept(event).await.unwrap() {
            AcceptOutcome::Inserted { id } => id,
            other => panic!("{other:?}"),
        }
    }

    /// Leases every due delivery and settles it DEAD: their events FAIL.
    async fn fail_all(&self) {
        let leased = self
            .store
            .lease(LeaseParams {
                endpoint_id: "lab".into(),
                target: "sink".into(),
                owner: "test".into(),
                max: 100,
                now_ms: i64::MAX / 2,
                lease_ms: 60_000,
                gate: Default::default(),
            })
            .await
            .unwrap();
        for lease in leased {
            let dead = Settlement::Dead {
                error: "http 500 (gave up after 1 attempt)".into(),
            };
            assert!(self.store.settle(&lease, dead, 2_000).await.unwrap());
        }
    }

    async fn status_of(&self, id: &str) -> String {
        let (detail, _) = self.reads.show_event(id, false).await.unwrap().unwrap();
        detail.summary.status
    }

    /// Signs in through the form; the session cookie and its CSRF token.
    async fn sign_in(&self) -> (String, String) {
        let answer = self
            .send(Sent::post("/ui/login").form(&[("token", TOKEN)]))
            .await;
        assert_eq!(answer.status, 303, "{}", answer.text());
        let cookie = answer.header(header::SET_COOKIE).to_owned();
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        // Named for the listener's port, so another instance on this host
        // (another port) keeps its own.
        assert!(cookie.starts_with("hookinbox_session_9090="), "{cookie}");
        let cookie = cookie.split(';').next().unwrap().to_owned();
        let page = self.send(Sent::get("/ui").header("cookie", &cookie)).await;
        assert_eq!(page.status, 200);
        let csrf = page
            .text()
            .split("name=\"csrf\" value=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a CSRF field on the page")
            .to_owned();
        (cookie, csrf)
    }
}

fn ids(page: &Value) -> Vec<String> {
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_api_lists_by_filter_newest_first_a_page_at_a_time() {
    let admin = Admin::start();
    let mut all = Vec::new();
    for n in 0..5 {
        let kind = if n % 2 == 0 { "even" } else { "odd" };
        all.push(
            admin
                .accept(&format!("e{n}"), kind, 1_000_000 * (n + 1))
                .await,
        );
    }
    all.reverse();

    let mut listed = Vec::new();
    let mut path = "/admin/events?limit=2".to_owned();
    loop {
        let answer = admin.send(Sent::get(&path).bearer()).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert_eq!(answer.header(header::CONTENT_TYPE), "application/json");
        let page = answer.json();
        listed.extend(ids(&page));
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/admin/events?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(listed, all);

    let only = |query: &'static str| {
        let admin = &admin;
        async move {
            let answer = admin
                .send(Sent::get(&format!("/admin/events?{query}")).bearer())
                .await;
            assert_eq!(answer.status, 200, "{query}: {}", answer.text());
            ids(&answer.json())
        }
    };
    assert_eq!(only("type=odd").await, vec![all[1].clone(), all[3].clone()]);
    assert_eq!(only("event_id=e2").await, vec![all[2].clone()]);
    assert_eq!(
        only("event_id=e2&endpoint=other").await,
        Vec::<String>::new()
    );
    assert_eq!(
        only("since=2000&before=4000").await,
        vec![all[2].clone(), all[3].clone()],
        "unix seconds; since inclusive, before exclusive"
    );
    assert_eq!(
        only("since=1970-01-01T00:33:20Z&before=1970-01-01T01:06:40Z").await,
        vec![all[2].clone(), all[3].clone()],
        "the same range in RFC 3339"
    );
    assert_eq!(only("status=ACCEPTED&endpoint=lab").await.len(), 5);
    assert_eq!(only("status=failed").await, Vec::<String>::new());
    // An untouched form field filters nothing.
    assert_eq!(only("status=&type=").await.len(), 5);
}

#[tokio::test]
async fn bad_parameters_are_400_with_the_error_shape_and_name_the_parameter() {
    let admin = Admin::start();
    for (query, names) in [
        ("status=lost", "status"),
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=-1", "limit"),
        ("limit=many", "limit"),
        ("cursor=12.not-an-id", "cursor"),
        ("since=yesterday", "since"),
        ("before=99999999999999999999", "before"),
    ] {
        let answer = admin
            .send(Sent::get(&format!("/admin/events?{query}")).bearer())
            .await;
        assert_eq!(answer.status, 400, "{query}: {}", answer.text());
        let body = answer.json();
        assert_eq!(body["error"], "bad_request", "{query}");
        assert!(
            body["message"].as_str().unwrap().contains(names),
            "{query}: {body}"
        );
        assert!(answer.body.ends_with(b"}\n"), "one line");
    }
    let missing = admin.send(Sent::get("/admin/events/nope").bearer()).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "not_found");
}

#[tokio::test]
async fn an_event_shows_deliveries_and_attempts_and_its_payload_only_on_request() {
    let admin = Admin::start();
    let id = admin.accept("shown", "invoice.paid", 5_000).await;
    admin.fail_all().await;

    let plain = admin
        .send(Sent::get(&format!("/admin/events/{id}")).bearer())
        .await;
    assert_eq!(plain.status, 200, "{}", plain.text());
    let event = plain.json();
    assert_eq!(event["id"], id.as_str());
    assert_eq!(event["status"], "FAILED");
    assert_eq!(event["deliveries"][0]["target"], "sink");
    assert_eq!(event["deliveries"][0]["status"], "DEAD");
    assert_eq!(
        event["deliveries"][0]["attempt_log"][0]["error"],
        "http 500 (gave up after 1 attempt)"
    );
    assert!(event.get("payload_base64").is_none(), "{event}");
    assert!(event.get("headers").is_none(), "{event}");
    assert!(
        !plain.text().contains("shown\\\""),
        "no body bytes: {event}"
    );

    let full = admin
        .send(Sent::get(&format!("/admin/events/{id}?payload=true")).bearer())
        .await
        .json();
    let payload = base64::engine::general_purpose::STANDARD
        .decode(full["payload_base64"].as_str().unwrap())
        .unwrap();
    assert_eq!(payload, br#"{"id":"shown","type":"invoice.paid"}"#);
    assert_eq!(
        full["headers"],
        json!([{"name": "x-timestamp", "value": "1700000000"}])
    );
    let bad = admin
        .send(Sent::get(&format!("/admin/events/{id}?payload=perhaps")).bearer())
        .await;
    assert_eq!(bad.status, 400);
}

#[tokio::test]
async fn a_dry_run_counts_and_changes_nothing_a_replay_reopens() {
    let admin = Admin::start();
    let failed = admin.accept("f1", "t", 1_000).await;
    let other = admin.accept("f2", "other", 2_000).await;
    admin.fail_all().await;
    let waiting = admin.accept("w", "t", 3_000).await;

    let dry = admin
        .send(
            Sent::post("/admin/replay")
                .bearer()
                .json(json!({"filter": {"type": "t"}, "dry_run": true})),
        )
        .await;
    assert_eq!(dry.status, 200, "{}", dry.text());
    assert_eq!(
        dry.json(),
        json!({"dry_run": true, "matched": 2, "replayed": 0})
    );
    assert_eq!(admin.status_of(&failed).await, "FAILED", "nothing changed");

    let real = admin
        .send(
            Sent::post("/admin/replay")
                .bearer()
                .json(json!({"filter": {"type": "t"}})),
        )
        .await;
    assert_eq!(
        real.json(),
        json!({"dry_run": false, "matched": 2, "replayed": 1}),
        "the waiting event has a delivery pending"
    );
    assert_eq!(admin.status_of(&failed).await, "ACCEPTED");
    assert_eq!(admin.status_of(&other).await, "FAILED", "not selected");
    assert_eq!(admin.status_of(&waiting).await, "ACCEPTED");

    let one_dry = admin
        .send(Sent::post(&format!("/admin/events/{other}/replay?dry_run=true")).bearer())
        .await;
    assert_eq!(one_dry.json()["replayed"], 0);
    assert_eq!(admin.status_of(&other).await, "FAILED");
    let one = admin
        .send(Sent::post(&format!("/admin/events/{other}/replay")).bearer())
        .await;
    assert_eq!(
        one.json(),
        json!({"dry_run": false, "matched": 1, "replayed": 1})
    );
    assert_eq!(admin.status_of(&other).await, "ACCEPTED");

    for (body, status) in [
        (json!({"filter": {}}), 400),
        (json!({"filter": {"status": "lost"}}), 400),
        (json!({"filter": {"type": "t"}, "dry_rum": true}), 422),
        (json!({"filter": {"type": "t", "stauts": "failed"}}), 422),
        (json!({"dry_run": true}), 422),
    ] {
        let answer = admin
            .send(Sent::post("/admin/replay").bearer().json(body.clone()))
            .await;
        assert_eq!(answer.status, status, "{body}: {}", answer.text());
        assert_eq!(answer.json()["error"], "bad_request", "{body}");
    }
    let not_json = admin
        .send(Sent::post("/admin/replay").bearer().form(&[("type", "t")]))
        .await;
    assert_eq!(not_json.status, 415);
    assert_eq!(not_json.json()["error"], "content_type");
    let xml = admin
        .send(
            Sent::post("/admin/replay")
                .bearer()
                .header("content-type", "application/xml"),
        )
        .await;
    assert_eq!(xml.status, 415, "{}", xml.text());
    assert_eq!(xml.json()["error"], "content_type");
    let missing = admin
        .send(Sent::post("/admin/events/nope/replay").bearer())
        .await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn the_token_is_required_and_a_foreign_host_is_refused_first() {
    let admin = Admin::start();
    for path in [
        "/admin/events",
        "/admin/openapi.json",
        "/admin/stats",
        "/admin/overview",
    ] {
        let anonymous = admin.send(Sent::get(path)).await;
        assert_eq!(anonymous.status, 401, "{path}");
        assert_eq!(anonymous.header(header::WWW_AUTHENTICATE), "Bearer");
        let wrong = admin
            .send(Sent::get(path).header("authorization", "Bearer not-the-token-at-all"))
            .await;
        assert_eq!(wrong.status, 401, "{path}");
        let rebound = admin
            .send(Sent::get(path).bearer().header("host", "evil.example:9090"))
            .await;
        assert_eq!(rebound.status, 421, "{path}");
        assert_eq!(
            admin.send(Sent::get(path).bearer()).await.status,
            200,
            "{path}"
        );
    }
    let replay = admin
        .send(Sent::post("/admin/replay").json(json!({"filter": {"status": "failed"}})))
        .await;
    assert_eq!(replay.status, 401);
    for path in ["/ui", "/ui/login", "/ui/style.css"] {
        let rebound = admin
            .send(Sent::get(path).header("host", "evil.example:9090"))
            .await;
        assert_eq!(rebound.status, 421, "{path}");
    }
}

#[tokio::test]
async fn the_openapi_document_is_3_1_and_names_every_route_and_the_token() {
    let admin = Admin::start();
    let answer = admin.send(Sent::get("/admin/openapi.json").bearer()).await;
    assert_eq!(answer.status, 200);
    let document = answer.json();
    assert_eq!(document["openapi"], "3.1.0");
    let paths: Vec<&str> = document["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        paths,
        vec![
            "/admin/endpoints/{endpoint}/stream",
            "/admin/events",
            "/admin/events/{id}",
            "/admin/events/{id}/replay",
            "/admin/overview",
            "/admin/replay",
            "/admin/stats",
            "/admin/targets",
            "/admin/targets/{endpoint}/{target}/pause",
            "/admin/targets/{endpoint}/{target}/resume"
        ]
    );
    assert_eq!(
        document["components"]["securitySchemes"]["admin_token"],
        json!({"type": "http", "scheme": "bearer"})
    );
    let parameters: Vec<&str> = document["paths"]["/admin/events"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        parameters,
        vec!["status", "endpoint", "type", "event_id", "since", "before", "cursor", "limit"]
    );
}

#[tokio::test]
async fn the_dashboard_signs_in_with_the_token_and_refuses_forms_without_csrf() {
    let admin = Admin::start();
    let id = admin.accept("doomed", "payment.failed", 1_000).await;
    admin.fail_all().await;

    let signed_out = admin.send(Sent::get("/ui")).await;
    assert_eq!(signed_out.status, 303);
    assert_eq!(signed_out.header(header::LOCATION), "/ui/login");
    let wrong = admin
        .send(Sent::post("/ui/login").form(&[("token", "not-the-token-at-all")]))
        .await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.header(header::SET_COOKIE).is_empty());

    let (cookie, csrf) = admin.sign_in().await;
    let overview = admin.send(Sent::get("/ui").header("cookie", &cookie)).await;
    assert!(
        overview
            .text()
            .contains(&format!("href=\"/ui/events/{id}\">doomed</a>")),
        "the failed event is on the overview: {}",
        overview.text()
    );
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ] {
        assert_eq!(overview.header(name.clone()), value, "{name}");
    }
    assert!(!overview.text().contains("<script"), "no scripts at all");

    let replay = format!("/ui/events/{id}/replay");
    let without = admin
        .send(Sent::post(&replay).header("cookie", &cookie).form(&[]))
        .await;
    assert_eq!(without.status, 403);
    let forged = admin
        .send(
            Sent::post(&replay)
                .header("cookie", &cookie)
                .form(&[("csrf", "0123456789abcdef")]),
        )
        .await;
    assert_eq!(forged.status, 403);
    let cross_site = admin
        .send(
            Sent::post(&replay)
                .header("cookie", &cookie)
                .header("origin", "http://evil.example")
                .form(&[("csrf", &csrf)]),
        )
        .await;
    assert_eq!(cross_site.status, 403);
    let bulk = admin
        .send(
            Sent::post("/ui/replay")
                .header("cookie", &cookie)
                .form(&[("status", "failed")]),
        )
        .await;
    assert_eq!(bulk.status, 403);
    let logout = admin
        .send(Sent::post("/ui/logout").header("cookie", &cookie).form(&[]))
        .await;
    assert_eq!(logout.status, 403);
    assert_eq!(admin.status_of(&id).await, "FAILED", "nothing was replayed");

    let done = admin
        .send(
            Sent::post(&replay)
                .header("cookie", &cookie)
                .header("origin", &format!("http://{HOST}"))
                .form(&[("csrf", &csrf)]),
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text());
    assert_eq!(
        done.header(header::LOCATION),
        format!("/ui/events/{id}?replayed=1")
    );
    assert_eq!(admin.status_of(&id).await, "ACCEPTED");

    let out = admin
        .send(
            Sent::post("/ui/logout")
                .header("cookie", &cookie)
                .form(&[("csrf", &csrf)]),
        )
        .await;
    assert_eq!(out.status, 303);
    assert_eq!(
        admin
            .send(Sent::get("/ui").header("cookie", &cookie))
            .await
            .status,
        303,
        "the session ended with the sign-out"
    );
}

#[tokio::test]
async fn an_event_no_target_took_says_so_in_the_api_and_the_dashboard() {
    let admin = Admin::start();
    let id = admin
        .accept_routed("skipped", "charge.refunded", 1_000, false)
        .await;
    let event = admin
        .send(Sent::get(&format!("/admin/events/{id}")).bearer())
        .await
        .json();
    assert_eq!(event["status"], "PROCESSED");
    assert_eq!(event["routed_to"], json!([]));
    assert_eq!(event["not_routed"], json!(["sink"]));
    let (cookie, _) = admin.sign_in().await;
    let page = admin
        .send(Sent::get(&format!("/ui/events/{id}")).header("cookie", &cookie))
        .await
        .text();
    assert!(page.contains("No deliveries: no target matched"), "{page}");
    assert!(page.contains("<dt>Not routed</dt><dd>sink</dd>"), "{page}");
}

#[tokio::test]
async fn every_dashboard_page_answers_and_bulk_replay_confirms_first() {
    let admin = Admin::start();
    let id = admin.accept("pay_1", "payment.failed", 1_000).await;
    admin.accept("pay_2", "payment.failed", 2_000).await;
    admin.fail_all().await;
    let (cookie, csrf) = admin.sign_in().await;
    let page = |path: String| {
        let admin = &admin;
        let cookie = cookie.clone();
        async move { admin.send(Sent::get(&path).header("cookie", &cookie)).await }
    };
    for path in [
        "/ui".to_owned(),
        "/ui/events".to_owned(),
        "/ui/events?status=failed&endpoint=lab&type=payment.failed&since=0".to_owned(),
        format!("/ui/events/{id}"),
        format!("/ui/events/{id}?payload=1"),
        format!("/ui/events/{id}/replay"),
        "/ui/endpoints".to_owned(),
        "/ui/endpoints/lab".to_owned(),
    ] {
        let answer = page(path.clone()).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text());
        assert!(answer
            .text()
            .starts_with("<!DOCTYPE html><html lang=\"en\">"));
    }
    assert!(page(format!("/ui/events/{id}?payload=1"))
        .await
        .text()
        .contains("{&quot;id&quot;:&quot;pay_1&quot;"));
    assert!(!page(format!("/ui/events/{id}"))
        .await
        .text()
        .contains("&quot;id&quot;:&quot;pay_1&quot;"));
    assert_eq!(page("/ui/endpoints/nope".to_owned()).await.status, 404);
    assert_eq!(page("/ui/events?status=lost".to_owned()).await.status, 400);
    assert_eq!(page("/ui/events/nope".to_owned()).await.status, 404);

    // Paging: one event per page, a link to the next.
    let first = page("/ui/events?limit=1".to_owned()).await.text();
    let next = first
        .split("href=\"/ui/events?")
        .find_map(|rest| rest.split('"').next().filter(|q| q.contains("cursor=")))
        .expect("a next-page link")
        .replace("&amp;", "&");
    let second = page(format!("/ui/events?{next}")).await.text();
    assert!(second.contains(&format!("/ui/events/{id}\"")), "{second}");

    let confirm = page("/ui/replay?status=failed".to_owned()).await;
    assert!(
        confirm.text().contains("2 event(s) match"),
        "{}",
        confirm.text()
    );
    assert_eq!(
        admin.status_of(&id).await,
        "FAILED",
        "the confirmation changes nothing"
    );
    let done = admin
        .send(
            Sent::post("/ui/replay")
                .header("cookie", &cookie)
                .form(&[("csrf", &csrf), ("status", "failed")]),
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.text());
    assert!(done.text().contains("Replayed 2 of 2"), "{}", done.text());
    assert_eq!(admin.status_of(&id).await, "ACCEPTED");
}

/// An event on `lab`, routed to `sink` or, when not `routed`, to no target.
fn routed_event(event_id: &str, event_type: &str, received_at_ms: i64, routed: bool) -> NewEvent {
    let (targets, not_routed) = if routed {
        (vec!["sink".into()], Vec::new())
    } else {
        (Vec::new(), vec!["sink".into()])
    };
    let body = Bytes::from(format!(
        "{{\"id\":\"{event_id}\",\"type\":\"{event_type}\"}}"
    ));
    NewEvent {
        endpoint_id: "lab".into(),
        provider: "lab".into(),
        provider_event_id: event_id.into(),
        event_type: Some(event_type.into()),
        object_id: None,
        object_version: None,
        provider_created_at: None,
        received_at_ms,
        content_type: Some("application/json".into()),
        fingerprint: Fingerprint::of(&body),
        payload: body,
        audit_headers: vec![("x-timestamp".into(), "1700000000".into())],
        matched_secret_version: "v1".into(),
        targets,
        not_routed,
        unsigned_metadata: UnsignedMetadata::default(),
        fingerprint_window_ms: None,
        delays_ms: Default::default(),
        trace_parent: None,
    }
}

#[tokio::test]
async fn an_event_in_a_trace_names_it_in_the_api_its_schema_and_the_dashboard() {
    let admin = Admin::start();
    let mut event = routed_event("traced", "charge.succeeded", 1_000, true);
    event.trace_parent = Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into());
    let id = admin.insert(event).await;
    let untraced = admin.accept("untraced", "charge.succeeded", 1_001).await;
    let shown = |id: String| {
        let admin = &admin;
        async move {
            admin
                .send(Sent::get(&format!("/admin/events/{id}")).bearer())
                .await
                .json()
        }
    };
    assert_eq!(
        shown(id.clone()).await["trace_id"],
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(shown(untraced).await["trace_id"], Value::Null);
    let document = admin
        .send(Sent::get("/admin/openapi.json").bearer())
        .await
        .json();
    // EventDetail is `allOf` the summary and its own properties.
    let detail = &document["components"]["schemas"]["EventDetail"];
    let property = detail["allOf"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(std::iter::once(detail))
        .map(|part| &part["properties"]["trace_id"])
        .find(|property| property.is_object());
    assert!(
        property.is_some(),
        "{:#}",
        document["components"]["schemas"]["EventDetail"]
    );
    let (cookie, _) = admin.sign_in().await;
    let page = admin
        .send(Sent::get(&format!("/ui/events/{id}")).header("cookie", &cookie))
        .await
        .text();
    assert!(
        page.contains("<dt>Trace id</dt><dd class=\"mono\">4bf92f3577b34da6a3ce929d0e0e4736</dd>"),
        "{page}"
    );
}

/// Leases what is due for `lab`/`sink` as a worker would (honouring a
/// pause); how many it took.
async fn lease_sink(admin: &Admin) -> usize {
    admin
        .store
        .lease(LeaseParams {
            endpoint_id: "lab".into(),
            target: "sink".into(),
            owner: "test".into(),
            max: 100,
            now_ms: i64::MAX / 2,
            lease_ms: 60_000,
            gate: Default::default(),
        })
        .await
        .unwrap()
        .len()
}

#[tokio::test]
async fn a_target_is_paused_by_the_api_and_resumed_from_the_dashboard() {
    let admin = Admin::start();
    admin.accept("waits", "thing.done", 1_000).await;

    let listed = admin.send(Sent::get("/admin/targets").bearer()).await;
    assert_eq!(listed.status, 200, "{}", listed.text());
    assert_eq!(
        listed.json(),
        json!({"targets": [{
            "endpoint": "lab", "target": "sink", "state": "closed", "paused_at_ms": null,
            "circuit": "closed", "failures": 0, "open_until_ms": null
        }]})
    );
    let unauthorised = admin
        .send(Sent::post("/admin/targets/lab/sink/pause"))
        .await;
    assert_eq!(unauthorised.status, 401);
    let cross_site = admin
        .send(
            Sent::post("/admin/targets/lab/sink/pause")
                .bearer()
                .header("origin", "http://evil.example"),
        )
        .await;
    assert_eq!(cross_site.status, 403);
    for unknown in [
        "/admin/targets/lab/nope/pause",
        "/admin/targets/nope/sink/resume",
    ] {
        let answer = admin.send(Sent::post(unknown).bearer()).await;
        assert_eq!(answer.status, 404, "{unknown}");
        assert_eq!(answer.json()["error"], "not_found", "{unknown}");
    }
    assert_eq!(
        admin.reads.target_gates().await.unwrap(),
        vec![],
        "refusals stored nothing"
    );

    let paused = admin
        .send(Sent::post("/admin/targets/lab/sink/pause").bearer())
        .await;
    assert_eq!(paused.status, 200, "{}", paused.text());
    let answer = paused.json();
    assert_eq!(answer["changed"], true);
    assert_eq!(answer["target"]["state"], "paused");
    assert!(answer["target"]["paused_at_ms"].is_i64(), "{answer}");
    let again = admin
        .send(Sent::post("/admin/targets/lab/sink/pause").bearer())
        .await;
    assert_eq!(again.json()["changed"], false, "already paused");
    assert_eq!(
        lease_sink(&admin).await,
        0,
        "a paused target's delivery waits"
    );

    // The dashboard shows the state, and resumes only with the CSRF token.
    let (cookie, csrf) = admin.sign_in().await;
    let page = admin
        .send(Sent::get("/ui/endpoints/lab").header("cookie", &cookie))
        .await;
    assert_eq!(page.status, 200);
    let text = page.text();
    assert!(
        text.contains(r#"<span class="status status-paused">paused</span>"#),
        "{text}"
    );
    assert!(text.contains(r#"action="/ui/targets/resume""#), "{text}");
    assert!(text.contains(">Resume</button>"), "{text}");
    let form = [("endpoint", "lab"), ("target", "sink")];
    let forged = admin
        .send(
            Sent::post("/ui/targets/resume")
                .header("cookie", &cookie)
                .form(&form),
        )
        .await;
    assert_eq!(forged.status, 403);
    assert_eq!(lease_sink(&admin).await, 0, "still paused");
    let unknown = admin
        .send(
            Sent::post("/ui/targets/resume")
                .header("cookie", &cookie)
                .form(&[
                    ("csrf", csrf.as_str()),
                    ("endpoint", "lab"),
                    ("target", "nope"),
                ]),
        )
        .await;
    assert_eq!(unknown.status, 404);
    let resumed = admin
        .send(
            Sent::post("/ui/targets/resume")
                .header("cookie", &cookie)
                .form(&[
                    ("csrf", csrf.as_str()),
                    ("endpoint", "lab"),
                    ("target", "sink"),
                ]),
        )
        .await;
    assert_eq!(resumed.status, 303, "{}", resumed.text());
    assert_eq!(
        resumed.header(header::LOCATION),
        "/ui/endpoints/lab?resumed=sink"
    );
    let page = admin
        .send(Sent::get("/ui/endpoints/lab?resumed=sink").header("cookie", &cookie))
        .await;
    let text = page.text();
    assert!(text.contains("Resumed sink"), "{text}");
    assert!(
        text.contains(r#"<span class="status status-closed">closed</span>"#),
        "{text}"
    );
    assert!(text.contains(">Pause</button>"), "{text}");
    let listed = admin.send(Sent::get("/admin/targets").bearer()).await;
    assert_eq!(listed.json()["targets"][0]["state"], "closed");
    assert_eq!(lease_sink(&admin).await, 1, "resumed: the delivery goes");
}
