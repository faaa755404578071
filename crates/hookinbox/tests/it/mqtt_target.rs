//! Delivery to an MQTT broker with the real binary and a real Mosquitto:
//! what a subscriber receives (MQTT 5 and 3.1.1), 2,000 events with a
//! kill -9 of the worker in the middle, a broker lost for 10 s under load,
//! a publish the broker refuses, and a broker that cannot be reached. Each
//! test publishes under a topic prefix of its own (`support::mqtt`).

use crate::support;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookinbox_testing::database::delivery_log;
use support::cut_proxy::CutProxy;
use support::mqtt::*;
use support::*;

const DELIVERED: &str = "DELIVERED";

fn delivered_count(db: &std::path::Path) -> usize {
    deliveries(db)
        .iter()
        .filter(|(s, _)| s == DELIVERED)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_reaches_a_subscriber_with_its_properties_and_bytes() {
    let prefix = unique_prefix();
    let subscriber = Subscriber::start(&mqtt_addr(), &format!("{prefix}/#")).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let topic = format!("{prefix}/{{provider}}/{{endpoint}}/{{event_type}}");
    let server = Server::start(
        dir.path(),
        &config_with_mqtt_target(&db, &mqtt_url(), &topic, "", ""),
    );
    let client = client();
    // inbox id → (provider event id, raw body)
    let mut sent = HashMap::new();
    for n in 0..20 {
        // Odd spacing: the bytes must arrive as sent, not re-serialised.
        let body = format!(r#"{{"id":"evt_m{n}", "type":"payment.succeeded","amount": {n}}}"#);
        let answer = post(
            &client,
            &server.url("/hooks/lab"),
            &lab_signed(body.clone(), now()),
        )
        .await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        let id = answer.json()["id"].as_str().unwrap().to_owned();
        sent.insert(id, (format!("evt_m{n}"), body));
    }
    assert!(
        eventually(Duration::from_secs(20), || delivered_count(&db) == 20).await,
        "{:?}",
        deliveries(&db)
    );
    // DELIVERED follows the PUBACK, which the broker sends once it has
    // routed the message: the subscriber has it or is about to.
    assert!(eventually(Duration::from_secs(5), || subscriber.count() >= 20).await);
    let received = subscriber.received();
    assert_eq!(received.len(), 20, "one message per event");
    for message in received {
        let id = message.property("Idempotency-Key");
        let (event_id, body) = sent
            .remove(&id)
            .unwrap_or_else(|| panic!("a message for no accepted event, or twice: {message:?}"));
        assert_eq!(
            message.payload,
            body.as_bytes(),
            "the raw body, byte for byte"
        );
        assert_eq!(message.topic, format!("{prefix}/lab/lab/payment_succeeded"));
        assert_eq!(message.content_type.as_deref(), Some("application/json"));
        assert_eq!(message.property("X-Hookinbox-Provider"), "lab");
        assert_eq!(message.property("X-Hookinbox-Endpoint"), "lab");
        assert_eq!(message.property("X-Hookinbox-Event-Id"), event_id);
        assert_eq!(
            message.property("X-Hookinbox-Event-Type"),
            "payment.succeeded"
        );
        // The lab scheme signs the body the id and type come from.
        assert_eq!(message.property("X-Hookinbox-Unsigned"), "");
    }
    assert!(sent.is_empty(), "never published: {sent:?}");
    assert!(inbox_status(&db).values().all(|s| s == "PROCESSED"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqtt_3_1_1_publishes_the_body_alone() {
    let prefix = unique_prefix();
    let subscriber = Subscriber::start(&mqtt_addr(), &format!("{prefix}/#")).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(
        dir.path(),
        &config_with_mqtt_target(
            &db,
            &mqtt_url(),
            &format!("{prefix}/{{endpoint}}"),
            "protocol = \"3.1.1\"",
            "",
        ),
    );
    let client = client();
    for n in 0..3 {
        let answer = post(
            &client,
            &server.url("/hooks/lab"),
            &lab_event(&format!("v3-{n}")),
        )
        .await;
        assert_eq!(answer.status, 200);
    }
    assert!(
        eventually(Duration::from_secs(20), || delivered_count(&db) == 3).await,
        "{:?}",
        deliveries(&db)
    );
    assert!(eventually(Duration::from_secs(5), || subscriber.count() >= 3).await);
    let received = subscriber.received();
    let mut events: Vec<String> = received
        .iter()
        .map(|message| {
            assert_eq!(message.topic, format!("{prefix}/lab"));
            assert!(message.user_properties.is_empty(), "{message:?}");
            let body: serde_json::Value = serde_json::from_slice(&message.payload).unwrap();
            body["id"].as_str().unwrap().to_owned()
        })
        .collect();
    events.sort();
    assert_eq!(events, ["v3-0", "v3-1", "v3-2"]);
}

/// An event of object `object` at `version`.
fn versioned(object: usize, version: usize) -> Signed {
    lab_signed(
        format!(
            r#"{{"id":"o{object}-v{version}","type":"order.updated","object_id":"order_{object}","object_version":{version}}}"#
        ),
        now(),
    )
}

/// Posts `versions` of each of `objects` objects to `url`, each object's
/// versions one after the other (so they are accepted in version order),
/// the objects side by side. The ids of the events the server acknowledged.
async fn post_versions(
    url: String,
    objects: usize,
    versions: std::ops::Range<usize>,
) -> Vec<String> {
    let client = Arc::new(client());
    let mut tasks = tokio::task::JoinSet::new();
    for object in 0..objects {
        let (client, url, versions) = (Arc::clone(&client), url.clone(), versions.clone());
        tasks.spawn(async move {
            let mut acked = Vec::new();
            for version in versions {
                let answer = post(&client, &url, &versioned(object, version)).await;
                assert_eq!(answer.status, 200, "{:?}", answer.body);
                acked.push(format!("o{object}-v{version}"));
            }
            acked
        });
    }
    let mut acked = Vec::new();
    while let Some(result) = tasks.join_next().await {
        acked.extend(result.expect("a posting task"));
    }
    acked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_events_with_a_kill9_in_the_middle_arrive_at_least_once_in_order() {
    const OBJECTS: usize = 20;
    const VERSIONS: usize = 100; // 2,000 events
    let prefix = unique_prefix();
    let subscriber = Subscriber::start(&mqtt_addr(), &format!("{prefix}/#")).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let config = config_with_mqtt_target(
        &db,
        &mqtt_url(),
        &format!("{prefix}/{{endpoint}}"),
        "concurrency = 16\nmax_attempts = 1000",
        "",
    );
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, &config).unwrap();
    let started = Instant::now();

    // Every event accepted first, with no workers, so the kill below falls
    // in the middle of the delivery and cannot cut the posting short.
    let acked = {
        let accepting = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);
        post_versions(accepting.url("/hooks/lab"), OBJECTS, 0..VERSIONS).await
    };
    assert_eq!(acked.len(), OBJECTS * VERSIONS);

    // Workers killed with deliveries in flight.
    let mut first = Server::start_with(dir.path(), &config_path);
    assert!(
        eventually(Duration::from_secs(30), || subscriber.count() >= 1_000).await,
        "delivery did not start: {:?}",
        deliveries(&db).first()
    );
    first.kill9();
    let at_kill = subscriber.count();
    assert!(
        delivered_count(&db) < acked.len(),
        "the kill came after the last delivery"
    );

    // A new process on the same database delivers the rest.
    let _second = Server::start_with(dir.path(), &config_path);
    assert!(
        eventually(Duration::from_secs(45), || delivered_count(&db)
            == acked.len())
        .await,
        "{} of {} delivered",
        delivered_count(&db),
        acked.len()
    );
    assert!(
        eventually(Duration::from_secs(10), || {
            let ids: HashSet<String> = subscriber
                .received()
                .iter()
                .map(|m| m.property("X-Hookinbox-Event-Id"))
                .collect();
            ids.len() >= acked.len()
        })
        .await,
        "not every acknowledged event reached the subscriber"
    );

    let received = subscriber.received();
    let acked: HashSet<String> = acked.into_iter().collect();
    // Each message is an acknowledged event, and every copy of one event
    // carries the same id and bytes.
    let mut first_copy: HashMap<String, (String, bytes::Bytes)> = HashMap::new();
    let mut versions_seen: HashMap<String, Vec<i64>> = HashMap::new();
    for message in &received {
        let event_id = message.property("X-Hookinbox-Event-Id");
        assert!(acked.contains(&event_id), "never acknowledged: {message:?}");
        let copy = (message.property("Idempotency-Key"), message.payload.clone());
        let earlier = first_copy.entry(event_id.clone()).or_insert(copy.clone());
        assert_eq!(*earlier, copy, "a duplicate under another id or body");
        let body: serde_json::Value = serde_json::from_slice(&message.payload).unwrap();
        versions_seen
            .entry(body["object_id"].as_str().unwrap().to_owned())
            .or_default()
            .push(body["object_version"].as_i64().unwrap());
    }
    assert_eq!(
        first_copy.len(),
        acked.len(),
        "every acknowledged event arrived"
    );
    // Ordered target: one object's versions never go backwards (a copy
    // sent again after the crash comes before the next version).
    for (object, versions) in &versions_seen {
        assert!(
            versions.windows(2).all(|pair| pair[0] <= pair[1]),
            "{object} out of order: {versions:?}"
        );
    }
    let duplicates = received.len() - acked.len();
    eprintln!(
        "2,000 events, kill -9 after {at_kill} received: {duplicates} duplicates, {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_lost_for_ten_seconds_under_load_loses_nothing_and_recovers_without_a_restart() {
    const EVENTS: usize = 600;
    let prefix = unique_prefix();
    let subscriber = Subscriber::start(&mqtt_addr(), &format!("{prefix}/#")).await;
    let proxy = CutProxy::start(mqtt_addr()).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(
        dir.path(),
        &config_with_mqtt_target(
            &db,
            &format!("mqtt://{}", proxy.addr),
            &format!("{prefix}/{{endpoint}}"),
            "concurrency = 16\nmax_attempts = 1000",
            "",
        ),
    );
    // Events posted throughout: before, during and after the cut.
    let url = server.url("/hooks/lab");
    let posting = tokio::spawn(async move {
        let client = client();
        let mut acked = Vec::new();
        for n in 0..EVENTS {
            let answer = post(&client, &url, &lab_event(&format!("cut-{n}"))).await;
            assert_eq!(answer.status, 200, "ingress does not depend on the target");
            acked.push(format!("cut-{n}"));
            tokio::time::sleep(Duration::from_millis(20)).await; // ~12 s of load
        }
        acked
    });
    assert!(
        eventually(Duration::from_secs(15), || subscriber.count() >= 20).await,
        "nothing delivered before the cut: {:?}",
        deliveries(&db).first()
    );
    proxy.cut().await;
    let cut_at = Instant::now();
    let during_cut = |db: &std::path::Path| {
        deliveries(db).iter().any(|(status, error)| {
            status != DELIVERED
                && error.as_deref().is_some_and(|e| {
                    e.starts_with("mqtt: not connected") || e.starts_with("mqtt: connection lost")
                })
        })
    };
    assert!(
        eventually(Duration::from_secs(9), || during_cut(&db)).await,
        "no attempt failed for the lost broker: {:?}",
        deliveries(&db).last()
    );
    // The outage is the test's subject: it lasts 10 s, under load. What
    // was on its way to the subscriber at the cut has arrived a second in.
    tokio::time::sleep_until((cut_at + Duration::from_secs(1)).into()).await;
    let delivered_during_cut = subscriber.count();
    tokio::time::sleep_until((cut_at + Duration::from_secs(10)).into()).await;
    assert_eq!(
        subscriber.count(),
        delivered_during_cut,
        "nothing reaches the broker while it is cut off"
    );
    proxy.mend();

    let acked = posting.await.expect("the posting task");
    assert!(
        eventually(Duration::from_secs(30), || delivered_count(&db) == EVENTS).await,
        "the client reconnects by itself: {} of {EVENTS} delivered, e.g. {:?}",
        delivered_count(&db),
        deliveries(&db).iter().find(|(s, _)| s != DELIVERED)
    );
    assert!(
        eventually(Duration::from_secs(10), || {
            let ids: HashSet<String> = subscriber
                .received()
                .iter()
                .map(|m| m.property("X-Hookinbox-Event-Id"))
                .collect();
            acked.iter().all(|id| ids.contains(id))
        })
        .await,
        "an acknowledged event never reached the subscriber"
    );
    assert!(
        server
            .logs()
            .contains("MQTT connection lost; reconnecting."),
        "{}",
        server.logs()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_the_broker_refuses_is_a_failed_attempt() {
    // Anonymous clients may publish under allowed/ only.
    let acl_dir = tempfile::tempdir().unwrap();
    let acl = acl_dir.path().join("acl");
    std::fs::write(&acl, "topic write allowed/#\ntopic read #\n").unwrap();
    let broker = TestBroker::start(&format!("acl_file {}", acl.display())).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(
        dir.path(),
        &config_with_mqtt_target(
            &db,
            &broker.url(),
            "denied/{endpoint}/{event_type}",
            "max_attempts = 3",
            "",
        ),
    );
    let answer = post(&client(), &server.url("/hooks/lab"), &lab_event("refused")).await;
    assert_eq!(answer.status, 200);
    assert!(
        eventually(Duration::from_secs(15), || deliveries(&db)
            .iter()
            .any(|(status, _)| status == "DEAD"))
        .await,
        "{:?}",
        delivery_log(&db)
    );
    let log = delivery_log(&db);
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].attempts, 3, "each refusal is an attempt: {log:?}");
    let expected =
        "mqtt: the broker refused the publish to denied/lab/payment_succeeded: NotAuthorized (0x87)";
    for attempt in &log[0].attempt_log {
        assert!(
            attempt
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with(expected)),
            "{attempt:?}"
        );
    }
    assert_eq!(inbox_status(&db)["refused"], "FAILED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_broker_is_retried_as_not_connected() {
    // Held bound but not listening: connections to it are refused.
    let reserved = ReservedPort::new();
    let nowhere = reserved.addr();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(
        dir.path(),
        &config_with_mqtt_target(
            &db,
            &format!("mqtt://{nowhere}"),
            "hookinbox-test/unreachable/{endpoint}",
            "max_attempts = 1000",
            "",
        ),
    );
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_event("no-broker"),
    )
    .await;
    assert_eq!(answer.status, 200, "ingress does not depend on the target");
    let expected = "mqtt: not connected (connect error: connection refused)";
    assert!(
        eventually(Duration::from_secs(15), || {
            let rows = deliveries(&db);
            rows.len() == 1 && rows[0].0 != DELIVERED && rows[0].1.as_deref() == Some(expected)
        })
        .await,
        "{:?}",
        deliveries(&db)
    );
}
