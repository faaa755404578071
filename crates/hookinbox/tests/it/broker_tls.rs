//! `amqps://` and `mqtts://` targets, with the real binary and the real
//! brokers behind a TLS-terminating proxy of the test's own
//! (`hookinbox_testing::TlsProxy`, a certificate from a CA the test makes):
//! with that CA as the target's `ca_file` every event reaches the broker
//! through a completed TLS handshake; with another CA the handshake is
//! refused, the attempt fails, and nothing reaches the broker.

use crate::support;

use std::time::Duration;

use support::mqtt::{config_with_mqtt_target, mqtt_addr, unique_prefix, Subscriber};
use support::rabbitmq::{config_with_rabbitmq_target, rabbitmq_address, TestBroker};
use support::*;

const DELIVERED: &str = "DELIVERED";
const EVENTS: usize = 5;

/// `ca_file = "<path>"` for a CA certificate written into `dir`.
fn ca_file(dir: &std::path::Path, name: &str, pki: &TestPki) -> String {
    let path = dir.join(name);
    std::fs::write(&path, &pki.ca_pem).unwrap();
    format!("ca_file = \"{}\"", path.display())
}

/// Posts [`EVENTS`] lab events, each acknowledged.
async fn post_events(server: &Server, prefix: &str) {
    let client = client();
    for n in 0..EVENTS {
        let answer = post(
            &client,
            &server.url("/hooks/lab"),
            &lab_event(&format!("evt_{prefix}_{n}")),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.error());
    }
}

fn delivered_count(db: &std::path::Path) -> usize {
    deliveries(db)
        .iter()
        .filter(|(status, _)| status == DELIVERED)
        .count()
}

/// Every delivery has failed at least once with an error of `kind` and
/// none is delivered.
fn all_failing(db: &std::path::Path, kind: &str) -> bool {
    let rows = deliveries(db);
    rows.len() == EVENTS
        && rows.iter().all(|(status, error)| {
            status != DELIVERED && error.as_deref().is_some_and(|e| e.starts_with(kind))
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_amqps_target_delivers_through_tls_with_the_ca_it_is_given() {
    let pki = TestPki::new(&["127.0.0.1"]);
    let proxy = TlsProxy::start(&pki, rabbitmq_address()).await;
    let broker = TestBroker::new().await;
    broker.bind().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let url = format!("amqps://guest:guest@127.0.0.1:{}/%2f", proxy.addr.port());
    let routing_key = format!("{}.{{endpoint}}", broker.prefix);
    let server = Server::start(
        dir.path(),
        &config_with_rabbitmq_target(
            &db,
            &url,
            &broker.exchange,
            &routing_key,
            &ca_file(dir.path(), "ca.pem", &pki),
        ),
    );
    post_events(&server, "amqps").await;
    assert!(
        eventually(Duration::from_secs(20), || delivered_count(&db) == EVENTS).await,
        "{:?}",
        deliveries(&db)
    );
    let received = broker.take_all(EVENTS as u32).await;
    assert_eq!(received.len(), EVENTS);
    assert!(proxy.handshakes() >= 1, "the target spoke TLS to the proxy");
    assert_eq!(proxy.refused(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_amqps_target_refuses_a_broker_certificate_of_another_ca() {
    let pki = TestPki::new(&["127.0.0.1"]);
    let other = TestPki::new(&["127.0.0.1"]);
    let proxy = TlsProxy::start(&pki, rabbitmq_address()).await;
    let broker = TestBroker::new().await;
    broker.bind().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let url = format!("amqps://guest:guest@127.0.0.1:{}/%2f", proxy.addr.port());
    let routing_key = format!("{}.{{endpoint}}", broker.prefix);
    let server = Server::start(
        dir.path(),
        &config_with_rabbitmq_target(
            &db,
            &url,
            &broker.exchange,
            &routing_key,
            &ca_file(dir.path(), "other-ca.pem", &other),
        ),
    );
    post_events(&server, "amqps_wrong_ca").await;
    assert!(
        eventually(Duration::from_secs(20), || all_failing(&db, "rabbitmq: ")).await,
        "{:?}",
        deliveries(&db)
    );
    assert!(proxy.refused() >= 1, "the handshake was refused");
    assert_eq!(proxy.handshakes(), 0, "no TLS session was ever made");
    assert_eq!(broker.ready().await, 0, "nothing reached the broker");
    assert_eq!(delivered_count(&db), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mqtts_target_delivers_through_tls_with_the_ca_it_is_given() {
    let pki = TestPki::new(&["127.0.0.1"]);
    let proxy = TlsProxy::start(&pki, mqtt_addr()).await;
    let prefix = unique_prefix();
    let subscriber = Subscriber::start(&mqtt_addr(), &format!("{prefix}/#")).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let url = format!("mqtts://127.0.0.1:{}", proxy.addr.port());
    let server = Server::start(
        dir.path(),
        &config_with_mqtt_target(
            &db,
            &url,
            &format!("{prefix}/{{endpoint}}"),
            &ca_file(dir.path(), "ca.pem", &pki),
            "",
        ),
    );
    post_events(&server, "mqtts").await;
    assert!(
        eventually(Duration::from_secs(20), || delivered_count(&db) == EVENTS).await,
        "{:?}",
        deliveries(&db)
    );
    assert!(
        eventually(Duration::from_secs(10), || subscriber.count() >= EVENTS).await,
        "{} of {EVENTS} reached the subscriber",
        subscriber.count()
    );
    assert!(proxy.handshakes() >= 1, "the target spoke TLS to the proxy");
    assert_eq!(proxy.refused(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mqtts_target_refuses_a_broker_certificate_of_another_ca() {
    let pki = TestPki::new(&["127.0.0.1"]);
    let other = TestPki::new(&["127.0.0.1"]);
    let proxy = TlsProxy::start(&pki, mqtt_addr()).await;
    let prefix = unique_prefix();
    let subscriber = Subscriber::start(&mqtt_addr(), &format!("{prefix}/#")).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let url = format!("mqtts://127.0.0.1:{}", proxy.addr.port());
    let server = Server::start(
        dir.path(),
        &config_with_mqtt_target(
            &db,
            &url,
            &format!("{prefix}/{{endpoint}}"),
            &ca_file(dir.path(), "other-ca.pem", &other),
            "",
        ),
    );
    post_events(&server, "mqtts_wrong_ca").await;
    assert!(
        eventually(Duration::from_secs(20), || all_failing(&db, "mqtt: ")).await,
        "{:?}",
        deliveries(&db)
    );
    assert!(proxy.refused() >= 1, "the handshake was refused");
    assert_eq!(proxy.handshakes(), 0, "no TLS session was ever made");
    assert_eq!(subscriber.count(), 0, "nothing reached the broker");
    assert_eq!(delivered_count(&db), 0);
}
