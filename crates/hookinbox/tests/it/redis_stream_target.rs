//! Delivery to Redis Streams with the real binary and a real server: what
//! a consumer reads, `MAXLEN ~`, 2,000 events with a kill -9 of the worker
//! in the middle, and a server lost for ten seconds under load (a proxy
//! cut between hookinbox and Redis). Each test has stream keys of its own
//! (`support::redis_streams`).

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use support::cut_proxy::CutProxy;
use support::ordered_load::{check_at_least_once_in_order, post_ordered};
use support::redis_streams::*;
use support::*;

const DELIVERED: &str = "DELIVERED";

fn delivered_count(db: &std::path::Path) -> usize {
    deliveries(db)
        .iter()
        .filter(|(s, _)| s == DELIVERED)
        .count()
}

/// (id field, provider event id) of each entry, in stream order.
fn ids(entries: &[Entry]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|e| {
            let event_id = e.headers()["X-Hookinbox-Event-Id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (e.field("id"), event_id)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_is_an_entry_with_its_id_type_headers_and_bytes() {
    let redis = TestRedis::new().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let template = format!("{}:{{provider}}:{{endpoint}}", redis.prefix);
    let server = Server::start(
        dir.path(),
        &config_with_redis_stream_target(&db, &redis_url(), &template, ""),
    );
    let client = client();
    let mut sent = HashMap::new();
    for n in 0..20 {
        let body = format!(r#"{{"id":"evt_n{n}", "type":"payment.succeeded","amount": {n}}}"#);
        let answer = post(
            &client,
            &server.url("/hooks/lab"),
            &lab_signed(body.clone(), now()),
        )
        .await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        let id = answer.json()["id"].as_str().unwrap().to_owned();
        sent.insert(id, (format!("evt_n{n}"), body));
    }
    assert!(
        eventually(Duration::from_secs(20), || delivered_count(&db) == 20).await,
        "{:?}",
        deliveries(&db)
    );
    let stream = format!("{}:lab:lab", redis.prefix);
    let entries = redis.entries(&stream).await;
    assert_eq!(entries.len(), 20, "one entry per event");
    for entry in entries {
        let id = entry.field("id");
        let (event_id, body) = sent
            .remove(&id)
            .unwrap_or_else(|| panic!("an entry for no accepted event, or twice: {id:?}"));
        assert_eq!(
            entry.fields["body"],
            body.as_bytes(),
            "the raw body, byte for byte"
        );
        assert_eq!(entry.field("type"), "payment.succeeded");
        let headers = entry.headers();
        assert_eq!(headers["Idempotency-Key"], id.as_str());
        assert_eq!(headers["Content-Type"], "application/json");
        assert_eq!(headers["X-Hookinbox-Provider"], "lab");
        assert_eq!(headers["X-Hookinbox-Endpoint"], "lab");
        assert_eq!(headers["X-Hookinbox-Event-Id"], event_id.as_str());
        assert_eq!(headers["X-Hookinbox-Event-Type"], "payment.succeeded");
        assert!(headers.get("X-Hookinbox-Unsigned").is_none(), "{headers}");
        let mut fields: Vec<&str> = entry.fields.keys().map(String::as_str).collect();
        fields.sort_unstable();
        assert_eq!(fields, ["body", "headers", "id", "type"]);
    }
    assert!(sent.is_empty(), "never added: {sent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maxlen_keeps_the_stream_near_its_length() {
    let redis = TestRedis::new().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let stream = format!("{}:capped", redis.prefix);
    let server = Server::start(
        dir.path(),
        &config_with_redis_stream_target(&db, &redis_url(), &stream, "maxlen = 10"),
    );
    let acked = post_ordered(&server.url("/hooks/lab"), "cap", 10, 50).await;
    assert!(
        eventually(Duration::from_secs(30), || delivered_count(&db)
            == acked.len())
        .await,
        "{:?}",
        deliveries(&db).first()
    );
    // `~`: Redis trims whole nodes (100 entries by default), never below 10.
    let kept = redis.len(&stream).await;
    assert!(
        (10..acked.len()).contains(&kept),
        "{kept} of {} kept",
        acked.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_events_survive_a_kill_9_of_the_worker_at_least_once_in_order() {
    const OBJECTS: usize = 50;
    const VERSIONS: i64 = 40; // 2,000 events
    let redis = TestRedis::new().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let stream = format!("{}:crash", redis.prefix);
    let config = config_with_redis_stream_target(&db, &redis_url(), &stream, "concurrency = 8");
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, &config).unwrap();

    let acked = {
        let server = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);
        post_ordered(&server.url("/hooks/lab"), "k9", OBJECTS, VERSIONS).await
    };
    assert_eq!(acked.len(), OBJECTS * VERSIONS as usize);

    let at_kill = {
        let mut server = Server::start_with_args(dir.path(), &config_path, &[]);
        assert!(
            eventually(Duration::from_secs(30), || delivered_count(&db) >= 300).await,
            "delivery never got going: {}",
            server.logs()
        );
        server.kill9();
        delivered_count(&db)
    };
    assert!(
        at_kill < acked.len(),
        "the kill came after the last delivery"
    );

    let _server = Server::start_with_args(dir.path(), &config_path, &[]);
    assert!(
        eventually(Duration::from_secs(40), || delivered_count(&db)
            == acked.len())
        .await,
        "{} of {} delivered",
        delivered_count(&db),
        acked.len()
    );
    let entries = redis.entries(&stream).await;
    let duplicates = check_at_least_once_in_order(&acked, &ids(&entries));
    eprintln!("killed at {at_kill} delivered; {duplicates} duplicate(s) after the restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_lost_for_ten_seconds_under_load_loses_nothing_and_recovers() {
    let redis = TestRedis::new().await;
    let proxy = CutProxy::start(redis_address()).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let stream = format!("{}:outage", redis.prefix);
    let server = Server::start(
        dir.path(),
        &config_with_redis_stream_target(&db, &redis_url_via(&proxy.addr.to_string()), &stream, ""),
    );
    let url = server.url("/hooks/lab");
    let load = tokio::spawn(async move {
        let mut acked = HashMap::new();
        for round in 0..16 {
            acked.extend(post_ordered(&url, &format!("r{round}"), 20, 5).await);
            tokio::time::sleep(Duration::from_millis(900)).await;
        }
        acked
    });
    assert!(
        eventually(Duration::from_secs(10), || delivered_count(&db) >= 50).await,
        "{:?}",
        deliveries(&db).first()
    );
    proxy.cut().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = deliveries(&db);
    assert!(
        during.iter().any(|(status, error)| status != DELIVERED
            && error.as_deref().is_some_and(|e| e.starts_with("redis: "))),
        "attempts fail while the server is gone"
    );
    tokio::time::sleep(Duration::from_secs(7)).await;
    proxy.mend();
    let acked = load.await.expect("the load");
    assert!(
        eventually(Duration::from_secs(30), || delivered_count(&db)
            == acked.len())
        .await,
        "the target reconnects by itself: {} of {} delivered",
        delivered_count(&db),
        acked.len()
    );
    let entries = redis.entries(&stream).await;
    check_at_least_once_in_order(&acked, &ids(&entries));
}
