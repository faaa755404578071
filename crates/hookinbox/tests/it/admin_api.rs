//! The admin API of the real binary, over HTTP, on SQLite and PostgreSQL:
//! pages that hold still while signed requests keep arriving, and a failed
//! event replayed through the API (a dry run first) that reaches its
//! target with the same idempotency key. The router-level cases (every
//! refusal, every filter) are in `src/admin/operator_tests.rs`.

use crate::support;

use std::collections::HashSet;
use std::time::Duration;

use http_body_util::Full;
use serde_json::{json, Value};
use support::postgres::PgSchema;
use support::*;

const TOKEN: &str = "admin-t0ken-for-api-tests";

/// A request to the admin API with the token; the answer's JSON.
async fn api(client: &HttpClient, method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(url)
        .header("authorization", format!("Bearer {TOKEN}"));
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let response = client
        .request(request.body(Full::new(body.into())).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let json = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| panic!("{url}: {status} {}", String::from_utf8_lossy(&bytes)));
    (status, json)
}

async fn accepted(client: &HttpClient, server: &Server, id: &str) -> String {
    let answer = post(client, &server.url("/hooks/lab"), &lab_event(id)).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.json()["id"].as_str().unwrap().to_owned()
}

/// Pages through `GET /admin/events` `limit` at a time while `arrive`
/// more events are accepted after each page; every id listed.
async fn list_while_arriving(
    client: &HttpClient,
    server: &Server,
    admin: &str,
    limit: usize,
    arrive: usize,
) -> Vec<String> {
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    for page_number in 0.. {
        let url = match &cursor {
            Some(cursor) => format!("http://{admin}/admin/events?limit={limit}&cursor={cursor}"),
            None => format!("http://{admin}/admin/events?limit={limit}"),
        };
        let (status, page) = api(client, "GET", &url, None).await;
        assert_eq!(status, 200, "{page}");
        for event in page["events"].as_array().unwrap() {
            listed.push(event["id"].as_str().unwrap().to_owned());
        }
        for n in 0..arrive {
            accepted(client, server, &format!("late_{page_number}_{n}")).await;
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    listed
}

/// Fails one event against a sink answering 500, checks a dry run changes
/// nothing, replays it through the API with the sink answering 200, and
/// waits until the API shows it PROCESSED; its inbox id.
async fn replay_through_the_api(
    client: &HttpClient,
    server: &Server,
    admin: &str,
    sink: &Sink,
) -> String {
    let id = accepted(client, server, "doomed").await;
    let event_url = format!("http://{admin}/admin/events/{id}");
    let status = || async { api(client, "GET", &event_url, None).await.1["status"].clone() };
    assert!(
        eventually_async(Duration::from_secs(20), || async {
            status().await == "FAILED"
        })
        .await,
        "the event failed: {}",
        api(client, "GET", &event_url, None).await.1
    );
    let attempts_before = sink.received().len();

    let filter = json!({"status": "failed", "event_id": "doomed"});
    let (code, dry) = api(
        client,
        "POST",
        &format!("http://{admin}/admin/replay"),
        Some(json!({"filter": filter, "dry_run": true})),
    )
    .await;
    assert_eq!(code, 200, "{dry}");
    assert_eq!(dry, json!({"dry_run": true, "matched": 1, "replayed": 0}));
    assert_eq!(status().await, "FAILED", "a dry run changes nothing");

    sink.respond_with(|_, _| (200, vec![]));
    let (code, done) = api(
        client,
        "POST",
        &format!("http://{admin}/admin/replay"),
        Some(json!({"filter": filter})),
    )
    .await;
    assert_eq!(code, 200, "{done}");
    assert_eq!(done, json!({"dry_run": false, "matched": 1, "replayed": 1}));
    assert!(
        eventually_async(Duration::from_secs(20), || async {
            status().await == "PROCESSED"
        })
        .await,
        "the replay was delivered"
    );
    let accepted = sink.accepted();
    assert_eq!(accepted.len(), 1, "delivered once");
    assert_eq!(
        accepted[0].header("idempotency-key"),
        id,
        "same idempotency key"
    );
    assert_eq!(sink.received().len(), attempts_before + 1);
    let (_, event) = api(client, "GET", &event_url, None).await;
    let deliveries: Vec<(i64, String)> = event["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["generation"].as_i64().unwrap(),
                d["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        deliveries,
        vec![(0, "DEAD".into()), (1, "DELIVERED".into())]
    );
    id
}

/// A dashboard page, with the bearer token (no session, as a script reads it).
async fn page(client: &HttpClient, url: &str) -> (u16, String) {
    let request = hyper::Request::get(url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Full::default())
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status().as_u16();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Polls an async condition until it holds or `timeout` passes.
async fn eventually_async<F, Fut>(timeout: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Accepts `count` events, then lists them `limit` at a time while more
/// arrive: each of them exactly once, newest first, none of the late ones.
async fn pages_hold_still(server: &Server, admin: &str, count: usize) {
    let client = client();
    let mut ids = Vec::new();
    for n in 0..count {
        ids.push(accepted(&client, server, &format!("early_{n}")).await);
    }
    let listed = list_while_arriving(&client, server, admin, 6, 3).await;
    let unique: HashSet<&String> = listed.iter().collect();
    assert_eq!(unique.len(), listed.len(), "no event twice: {listed:?}");
    ids.reverse();
    assert_eq!(
        listed, ids,
        "each early event once, newest first, no late one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_pages_hold_still_while_events_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let config = TestConfig::new(&dir.path().join("inbox.db")).extra(&admin_table(TOKEN));
    let server = Server::start(dir.path(), &config.to_string());
    let admin = server.admin_address().await.to_string();
    pages_hold_still(&server, &admin, 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_a_failed_event_is_replayed_through_the_api() {
    let sink = Sink::start().await;
    sink.respond_with(|_, _| (500, vec![]));
    let dir = tempfile::tempdir().unwrap();
    let config = TestConfig::new(&dir.path().join("inbox.db"))
        .http_target(&sink.url(), "max_attempts = 2")
        .extra(&admin_table(TOKEN));
    let server = Server::start(dir.path(), &config.to_string());
    let admin = server.admin_address().await.to_string();
    replay_through_the_api(&client(), &server, &admin, &sink).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_pages_hold_still_and_a_failed_event_is_replayed_through_the_api() {
    let schema = PgSchema::new();
    let sink = Sink::start().await;
    sink.respond_with(|_, _| (500, vec![]));
    let dir = tempfile::tempdir().unwrap();
    let config = schema.config(
        TestConfig::new(&dir.path().join("unused.db"))
            .http_target(&sink.url(), "max_attempts = 2")
            .extra(&admin_table(TOKEN)),
    );
    let server = Server::start(dir.path(), &config.to_string());
    let admin = server.admin_address().await.to_string();
    let replayed = replay_through_the_api(&client(), &server, &admin, &sink).await;
    // The dashboard reads the same PostgreSQL store.
    for (path, shows) in [
        ("/ui".to_owned(), "href=\"/ui/endpoints/lab\"".to_owned()),
        (
            "/ui/events?status=processed&event_id=doomed".to_owned(),
            replayed.clone(),
        ),
        (format!("/ui/events/{replayed}"), "DELIVERED".to_owned()),
        ("/ui/endpoints/lab".to_owned(), "doomed".to_owned()),
    ] {
        let (status, body) = page(&client(), &format!("http://{admin}{path}")).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(body.contains(&shows), "{path} shows {shows}: {body}");
    }
    // The replayed event is the newest; twenty more before the paging.
    let client = client();
    let mut ids = Vec::new();
    for n in 0..20 {
        ids.push(accepted(&client, &server, &format!("early_{n}")).await);
    }
    let listed = list_while_arriving(&client, &server, &admin, 6, 3).await;
    ids.reverse();
    assert_eq!(
        &listed[..20],
        &ids[..],
        "each early event once, newest first"
    );
    assert_eq!(
        listed.len(),
        21,
        "and the replayed one, received before them"
    );
}
