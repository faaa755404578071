//! What the log says about the events that go through: one INFO line per
//! accepted event and one per delivery outcome, with ids and latencies,
//! never a payload, a header value or a secret. Read from the real
//! binary's stderr, as an operator reads it.

use crate::support;

use std::time::Duration;

use support::*;

/// A field in the body that nothing may log.
const CARD: &str = "4242-4242-LOGMARK";

fn lines_with<'a>(logs: &'a str, needle: &str) -> Vec<&'a str> {
    logs.lines().filter(|line| line.contains(needle)).collect()
}

#[tokio::test]
async fn an_accepted_event_is_one_info_line_without_its_body() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &config(&db, ""));
    let body = format!(r#"{{"id":"evt_logged","type":"payment.succeeded","card":"{CARD}"}}"#);
    let event = lab_signed(body, now());
    let signature = event
        .headers
        .iter()
        .find(|(name, _)| name == "x-signature")
        .map(|(_, value)| value.clone())
        .unwrap();
    let client = client();

    let answer = post(&client, &server.url("/hooks/lab"), &event).await;
    assert_eq!(answer.status, 200);
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    // The line is written by the log's own thread, off the request path:
    // it follows the answer closely, not necessarily before it.
    let logged = eventually(Duration::from_secs(5), || {
        lines_with(&server.logs(), &id).len() == 1
    })
    .await;
    let logs = server.logs();
    assert!(logged, "{logs}");
    let lines = lines_with(&logs, &id);
    assert!(lines[0].contains(" INFO "), "{}", lines[0]);
    assert!(
        lines[0].contains(&format!(
            "Accepted an event. inbox_id={id} endpoint=lab event_id=evt_logged duplicate=false ack_ms="
        )),
        "{}",
        lines[0]
    );

    // The provider's retry: a line of its own, marked duplicate.
    assert_eq!(
        post(&client, &server.url("/hooks/lab"), &event)
            .await
            .status,
        200
    );
    let logged = eventually(Duration::from_secs(5), || {
        lines_with(&server.logs(), &id).len() == 2
    })
    .await;
    let logs = server.logs();
    assert!(logged, "{logs}");
    let lines = lines_with(&logs, &id);
    assert!(lines[1].contains(" duplicate=true "), "{}", lines[1]);

    for secret in [CARD, &signature, LAB_SECRET] {
        assert!(
            lines_with(&logs, secret).is_empty(),
            "`{secret}` logged:\n{logs}"
        );
    }
}

/// Lines are written off the request path, so some may still be queued
/// when the server is told to stop: a graceful stop (SIGTERM) writes them
/// all. Many events are sent at once so that lines queue up; the line of
/// every one answered 200 is in the log after the exit.
#[tokio::test]
async fn every_accepted_line_is_in_the_log_after_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let mut server = Server::start(dir.path(), &config(&db, ""));
    let client = client();
    let url = server.url("/hooks/lab");
    let sends = (0..200).map(|n| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let event = lab_event(&format!("evt_stop_{n}"));
            post(&client, &url, &event).await
        }
    });
    let answers = futures::future::join_all(sends).await;
    let ids: Vec<String> = answers
        .iter()
        .map(|answer| {
            assert_eq!(answer.status, 200);
            answer.json()["id"].as_str().unwrap().to_owned()
        })
        .collect();

    let status = server.terminate(Duration::from_secs(30)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    let logs = server.logs();
    for id in &ids {
        assert_eq!(
            lines_with(&logs, &format!("Accepted an event. inbox_id={id} ")).len(),
            1,
            "no line for {id}:\n{logs}"
        );
    }
}

/// With `--log-format json`, a delivery that fails once and then succeeds
/// leaves one line per attempt, each with the inbox id, the target, the
/// outcome and the attempt number; the failure with its (masked) error.
#[tokio::test]
async fn each_delivery_outcome_is_one_line() {
    let sink = Sink::start().await;
    sink.respond_with(|n, _| (if n == 0 { 503 } else { 200 }, vec![]));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, config_with_target(&db, &sink.url(), "", "")).unwrap();
    let server = Server::start_with_args(dir.path(), &config_path, &["--log-format", "json"]);

    let answer = post(&client(), &server.url("/hooks/lab"), &lab_event("evt_sent")).await;
    assert_eq!(answer.status, 200);
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    // The outcome is logged before it is recorded, so PROCESSED means both are in.
    let processed = eventually(Duration::from_secs(10), || {
        inbox_status(&db).get("evt_sent").map(String::as_str) == Some("PROCESSED")
    })
    .await;
    assert!(processed);

    let logs = server.logs();
    let deliveries: Vec<serde_json::Value> = logs
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|line| line["fields"]["inbox_id"] == id.as_str())
        .filter(|line| line["target"] == "hookinbox::telemetry::delivery_events")
        .collect();
    assert_eq!(deliveries.len(), 2, "{logs}");
    let (failed, delivered) = (&deliveries[0]["fields"], &deliveries[1]["fields"]);
    assert_eq!(deliveries[0]["level"], "INFO");
    assert_eq!(failed["outcome"], "retry");
    assert_eq!(failed["attempt"], 1);
    assert_eq!(failed["target"], "sink");
    assert_eq!(failed["endpoint"], "lab");
    assert_eq!(failed["error"], "http 503");
    assert!(failed["latency_ms"].as_f64().is_some(), "{failed}");
    assert_eq!(deliveries[1]["level"], "INFO");
    assert_eq!(delivered["outcome"], "delivered");
    assert_eq!(delivered["attempt"], 2);
    assert!(delivered.get("error").is_none(), "{delivered}");
}
