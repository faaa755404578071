//! Delivery to RabbitMQ with the real binary and a real broker: what a
//! consumer receives, an unroutable message, 2,000 events with a kill -9
//! of the worker in the middle, and a broker lost for ten seconds under
//! load (a proxy cut between hookinbox and the broker). Each test has its
//! own exchange and queue (`support::rabbitmq`).

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use support::cut_proxy::CutProxy;
use support::ordered_load::{check_at_least_once_in_order, post_ordered};
use support::rabbitmq::*;
use support::*;

const DELIVERED: &str = "DELIVERED";

fn delivered_count(db: &std::path::Path) -> usize {
    deliveries(db)
        .iter()
        .filter(|(s, _)| s == DELIVERED)
        .count()
}

/// (message id, provider event id) of each message, in queue order.
fn ids(received: &[Message]) -> Vec<(String, String)> {
    received
        .iter()
        .map(|m| (m.message_id(), m.header("X-Hookinbox-Event-Id")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_reaches_the_queue_persistent_with_its_headers_and_bytes() {
    let broker = TestBroker::new().await;
    broker.bind().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let routing_key = format!("{}.{{provider}}.{{endpoint}}.{{event_type}}", broker.prefix);
    let server = Server::start(
        dir.path(),
        &config_with_rabbitmq_target(&db, &rabbitmq_url(), &broker.exchange, &routing_key, ""),
    );
    let client = client();
    // inbox id → (provider event id, raw body)
    let mut sent = HashMap::new();
    for n in 0..20 {
        // Odd spacing: the bytes must arrive as sent, not re-serialised.
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
    let received = broker.take_all(20).await;
    assert_eq!(received.len(), 20, "one message per event");
    for message in received {
        let id = message.message_id();
        let (event_id, body) = sent
            .remove(&id)
            .unwrap_or_else(|| panic!("a message for no accepted event, or twice: {id:?}"));
        assert_eq!(message.body, body.as_bytes(), "the raw body, byte for byte");
        assert_eq!(
            message.routing_key,
            format!("{}.lab.lab.payment_succeeded", broker.prefix)
        );
        assert_eq!(*message.properties.delivery_mode(), Some(2), "persistent");
        assert_eq!(
            message
                .properties
                .content_type()
                .as_ref()
                .map(|c| c.as_str()),
            Some("application/json")
        );
        assert_eq!(message.header("Idempotency-Key"), id);
        assert_eq!(message.header("X-Hookinbox-Provider"), "lab");
        assert_eq!(message.header("X-Hookinbox-Endpoint"), "lab");
        assert_eq!(message.header("X-Hookinbox-Event-Id"), event_id);
        assert_eq!(
            message.header("X-Hookinbox-Event-Type"),
            "payment.succeeded"
        );
        assert_eq!(message.header("X-Hookinbox-Unsigned"), "");
        assert_eq!(message.header("Webhook-Signature"), "", "no signature");
    }
    assert!(sent.is_empty(), "never published: {sent:?}");
    assert!(inbox_status(&db).values().all(|s| s == "PROCESSED"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unroutable_message_is_a_failed_attempt_until_a_queue_is_bound() {
    let broker = TestBroker::new().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let routing_key = format!("{}.{{endpoint}}", broker.prefix);
    let server = Server::start(
        dir.path(),
        &config_with_rabbitmq_target(&db, &rabbitmq_url(), &broker.exchange, &routing_key, ""),
    );
    let answer = post(&client(), &server.url("/hooks/lab"), &lab_event("nowhere")).await;
    assert_eq!(answer.status, 200, "ingress does not depend on the target");
    let id = answer.json()["id"].as_str().unwrap().to_owned();

    // No queue is bound: the broker returns the message, the attempt fails.
    let expected = format!(
        "rabbitmq: unroutable: exchange {:?} routing key \"{}.lab\" (312 NO_ROUTE)",
        broker.exchange, broker.prefix
    );
    assert!(
        eventually(Duration::from_secs(10), || {
            let rows = deliveries(&db);
            rows.len() == 1 && rows[0].0 != DELIVERED && rows[0].1.as_deref() == Some(&expected)
        })
        .await,
        "{:?}",
        deliveries(&db)
    );
    let log = hookinbox_testing::database::delivery_log(&db);
    assert!(
        log[0]
            .attempt_log
            .iter()
            .any(|a| a.outcome == "PENDING" && a.error.as_deref() == Some(&expected)),
        "a recorded failed attempt: {log:?}"
    );
    assert_eq!(inbox_status(&db)["nowhere"], "ACCEPTED");

    broker.bind().await;
    assert!(
        eventually(Duration::from_secs(10), || delivered_count(&db) == 1).await,
        "{:?}",
        deliveries(&db)
    );
    let received = broker.take_all(1).await;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].message_id(), id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_events_survive_a_kill_9_of_the_worker_at_least_once_in_order() {
    const OBJECTS: usize = 50;
    const VERSIONS: i64 = 40; // 2,000 events
    let broker = TestBroker::new().await;
    broker.bind().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let routing_key = format!("{}.{{endpoint}}", broker.prefix);
    let config = config_with_rabbitmq_target(
        &db,
        &rabbitmq_url(),
        &broker.exchange,
        &routing_key,
        "concurrency = 8",
    );
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, &config).unwrap();

    // Accept every event first, with no workers: the crash below cuts
    // delivery, not ingress.
    let acked = {
        let server = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);
        post_ordered(&server.url("/hooks/lab"), "k9", OBJECTS, VERSIONS).await
    };
    assert_eq!(acked.len(), OBJECTS * VERSIONS as usize);

    // Workers, killed with SIGKILL while they deliver.
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
    let received = broker.take_all(acked.len() as u32).await;
    let duplicates = check_at_least_once_in_order(&acked, &ids(&received));
    eprintln!("killed at {at_kill} delivered; {duplicates} duplicate(s) after the restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_lost_for_ten_seconds_under_load_loses_nothing_and_recovers() {
    let broker = TestBroker::new().await;
    broker.bind().await;
    let proxy = CutProxy::start(rabbitmq_address()).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let routing_key = format!("{}.{{endpoint}}", broker.prefix);
    let server = Server::start(
        dir.path(),
        &config_with_rabbitmq_target(
            &db,
            &rabbitmq_url_via(&proxy.addr.to_string()),
            &broker.exchange,
            &routing_key,
            "",
        ),
    );
    // Load throughout: 20 objects, a version every ~25 ms each (about 800
    // events/s at most, bound by ingress), for the whole outage.
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
            && error
                .as_deref()
                .is_some_and(|e| e.starts_with("rabbitmq: "))),
        "attempts fail while the broker is gone"
    );
    // The outage lasts ten seconds in all.
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
    let received = broker.take_all(acked.len() as u32).await;
    check_at_least_once_in_order(&acked, &ids(&received));
}
