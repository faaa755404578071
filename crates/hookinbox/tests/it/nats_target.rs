//! Delivery to NATS JetStream with the real binary and a real server: what a
//! consumer receives, a stream that does not exist yet, a server that cannot
//! be reached or is lost for a while, and a crash between the PubAck and the
//! DELIVERED record. Each test has its own stream (`support::nats`).

use crate::support;

// The store's tests' proxy, to lose NATS without stopping the machine's server.
use crate::support::cut_proxy;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use support::nats::*;
use support::*;

const DELIVERED: &str = "DELIVERED";

fn delivered_count(db: &std::path::Path) -> usize {
    deliveries(db)
        .iter()
        .filter(|(s, _)| s == DELIVERED)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_reaches_a_consumer_once_with_its_headers_and_bytes() {
    let stream = TestStream::new().await;
    stream.create(Duration::from_secs(120)).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let subject = format!("{}.{{endpoint}}.{{event_type}}", stream.prefix);
    let server = Server::start(
        dir.path(),
        &config_with_nats_target(&db, &nats_url(), &subject, ""),
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
    assert_eq!(stream.stored().await, 20, "one message per event");
    let consumed = stream.consume_all(40).await;
    assert_eq!(consumed.len(), 20);
    for message in consumed {
        let id = message.header("Nats-Msg-Id");
        let (event_id, body) = sent
            .remove(&id)
            .unwrap_or_else(|| panic!("a message for no accepted event, or twice: {id:?}"));
        assert_eq!(
            message.payload,
            body.as_bytes(),
            "the raw body, byte for byte"
        );
        assert_eq!(
            message.subject,
            format!("{}.lab.payment_succeeded", stream.prefix)
        );
        assert_eq!(message.header("Idempotency-Key"), id);
        assert_eq!(message.header("Content-Type"), "application/json");
        assert_eq!(message.header("X-Hookinbox-Provider"), "lab");
        assert_eq!(message.header("X-Hookinbox-Endpoint"), "lab");
        assert_eq!(message.header("X-Hookinbox-Event-Id"), event_id);
        assert_eq!(
            message.header("X-Hookinbox-Event-Type"),
            "payment.succeeded"
        );
        // The lab scheme signs the body the id and type come from.
        assert_eq!(message.header("X-Hookinbox-Unsigned"), "");
    }
    assert!(sent.is_empty(), "never published: {sent:?}");
    assert!(inbox_status(&db).values().all(|s| s == "PROCESSED"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_stream_is_retried_and_the_event_delivered_once_it_exists() {
    let stream = TestStream::new().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let subject = format!("{}.{{endpoint}}.{{event_type}}", stream.prefix);
    let server = Server::start(
        dir.path(),
        &config_with_nats_target(&db, &nats_url(), &subject, "max_attempts = 1000"),
    );
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_event("no-stream"),
    )
    .await;
    assert_eq!(answer.status, 200, "ingress does not depend on the target");
    let id = answer.json()["id"].as_str().unwrap().to_owned();

    let expected = format!(
        "nats: no stream for subject {}.lab.payment_succeeded",
        stream.prefix
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
    assert_eq!(inbox_status(&db)["no-stream"], "ACCEPTED");

    stream.create(Duration::from_secs(120)).await;
    assert!(
        eventually(Duration::from_secs(10), || delivered_count(&db) == 1).await,
        "{:?}",
        deliveries(&db)
    );
    let consumed = stream.consume_all(10).await;
    assert_eq!(consumed.len(), 1);
    assert_eq!(consumed[0].header("Nats-Msg-Id"), id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_retried_as_not_connected() {
    // Held bound but not listening: connections to it are refused, and no
    // other process can take the port during the test.
    let reserved = ReservedPort::new();
    let nowhere = reserved.addr();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(
        dir.path(),
        &config_with_nats_target(
            &db,
            &format!("nats://{nowhere}"),
            "hookinbox-test.unreachable.{endpoint}",
            "max_attempts = 1000",
        ),
    );
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_event("no-server"),
    )
    .await;
    assert_eq!(answer.status, 200, "ingress does not depend on the target");
    assert!(
        eventually(Duration::from_secs(15), || {
            let rows = deliveries(&db);
            rows.len() == 1
                && rows[0].0 != DELIVERED
                && rows[0]
                    .1
                    .as_deref()
                    .is_some_and(|e| e.starts_with("nats: not connected"))
        })
        .await,
        "{:?}",
        deliveries(&db)
    );
    let error = deliveries(&db)[0].1.clone().unwrap_or_default();
    assert!(
        !error.contains(&nowhere.port().to_string()),
        "no server address in last_error: {error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_connection_is_retried_and_recovers_without_a_restart() {
    let stream = TestStream::new().await;
    stream.create(Duration::from_secs(120)).await;
    let upstream = nats_url().trim_start_matches("nats://").to_owned();
    let proxy = cut_proxy::CutProxy::start(upstream).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let subject = format!("{}.{{endpoint}}", stream.prefix);
    let server = Server::start(
        dir.path(),
        &config_with_nats_target(
            &db,
            &format!("nats://{}", proxy.addr),
            &subject,
            "max_attempts = 1000",
        ),
    );
    let client = client();
    let url = server.url("/hooks/lab");
    assert_eq!(post(&client, &url, &lab_event("before")).await.status, 200);
    assert!(
        eventually(Duration::from_secs(10), || delivered_count(&db) == 1).await,
        "{:?}",
        deliveries(&db)
    );

    proxy.cut().await;
    assert_eq!(
        post(&client, &url, &lab_event("during")).await.status,
        200,
        "ingress does not depend on the target"
    );
    assert!(
        eventually(Duration::from_secs(15), || {
            let rows = deliveries(&db);
            rows.len() == 2
                && rows[1].0 != DELIVERED
                && rows[1]
                    .1
                    .as_deref()
                    .is_some_and(|e| e.starts_with("nats: not connected"))
        })
        .await,
        "{:?}",
        deliveries(&db)
    );

    proxy.mend();
    assert!(
        eventually(Duration::from_secs(20), || delivered_count(&db) == 2).await,
        "the client reconnects by itself: {:?}",
        deliveries(&db)
    );
    let events: Vec<String> = stream
        .consume_all(10)
        .await
        .iter()
        .map(|m| m.header("X-Hookinbox-Event-Id"))
        .collect();
    assert_eq!(events, ["before", "during"], "each once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_the_pub_ack_and_delivered_reaches_consumers_once() {
    const EVENTS: usize = 12;
    let stream = TestStream::new().await;
    stream.create(Duration::from_secs(120)).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let subject = format!("{}.{{endpoint}}.{{event_type}}", stream.prefix);
    let config = config_with_nats_target(&db, &nats_url(), &subject, "concurrency = 4");
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, &config).unwrap();

    // Accept every event first, with no workers, so the crash below cannot
    // cut the sending short.
    {
        let server = Server::start_with_args(dir.path(), &config_path, &["--no-workers"]);
        let client = client();
        for n in 0..EVENTS {
            let answer = post(
                &client,
                &server.url("/hooks/lab"),
                &lab_event(&format!("crash-{n}")),
            )
            .await;
            assert_eq!(answer.status, 200);
        }
    }
    // Workers that abort right after a PubAck, before recording DELIVERED.
    {
        let mut server = Server::start_with_failpoint(
            dir.path(),
            &config,
            "after_target_accepted_before_settle",
        );
        assert!(
            eventually(Duration::from_secs(15), || server
                .logs()
                .contains("failpoint after_target_accepted_before_settle hit"))
            .await,
            "the failpoint was never reached:\n{}",
            server.logs()
        );
        server.kill9(); // already aborted; reap it
    }
    let status = inbox_status(&db);
    let published: Vec<String> = stream
        .consume_all(2 * EVENTS)
        .await
        .iter()
        .map(|m| m.header("X-Hookinbox-Event-Id"))
        .collect();
    assert!(
        published.iter().any(|event| status[event] == "ACCEPTED"),
        "an event is in the stream without its DELIVERED record: {published:?} {status:?}"
    );

    // After the restart the lease expires, the event is published again
    // with the same Nats-Msg-Id, and JetStream drops the second copy.
    let _server = Server::start(dir.path(), &config);
    assert!(
        eventually(Duration::from_secs(20), || delivered_count(&db) == EVENTS).await,
        "{:?}",
        deliveries(&db)
    );
    assert_eq!(
        stream.stored().await,
        EVENTS as u64,
        "no second copy stored"
    );
    let consumed = stream.consume_all(2 * EVENTS).await;
    let mut seen = HashSet::new();
    for message in &consumed {
        assert!(
            seen.insert(message.header("X-Hookinbox-Event-Id")),
            "consumed twice: {message:?}"
        );
    }
    let accepted: HashSet<String> = inbox_status(&db).into_keys().collect();
    assert_eq!(seen, accepted, "each accepted event, once");
}

#[test]
fn a_bad_credentials_file_stops_start_up_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let config_path = dir.path().join("hookinbox.toml");
    let with_credentials = |file: &str| {
        config_with_nats_target(
            &db,
            "nats://127.0.0.1:4222",
            "hookinbox-test.creds",
            &format!("credentials_file = \"{file}\""),
        )
    };

    std::fs::write(
        dir.path().join("bad.creds"),
        "-----BEGIN NATS USER JWT-----\nnot-a-jwt\n------END NATS USER JWT------\n\
         SUA-SEED-MUST-NOT-BE-PRINTED\n",
    )
    .unwrap();
    std::fs::write(&config_path, with_credentials("bad.creds")).unwrap();
    let (code, stderr) = serve_refused(&config_path, &[]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("endpoint[0].target[0].credentials_file: "),
        "{stderr}"
    );
    assert!(stderr.contains("not a NATS credentials file"), "{stderr}");
    assert!(!stderr.contains("SUA-SEED"), "{stderr}");

    std::fs::write(&config_path, with_credentials("missing.creds")).unwrap();
    let (code, stderr) = serve_refused(&config_path, &[]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("endpoint[0].target[0].credentials_file: "),
        "{stderr}"
    );
}
