//! Delivery to a real HTTP sink: the re-signed request, retries while the
//! target is down, dead letters and replay, Retry-After, per-object
//! ordering — on SQLite and on PostgreSQL alike.

use crate::support;

use std::collections::HashSet;
use std::time::Duration;

use hookinbox_verify::{adapter_for, AdapterSettings, Headers, Request, SecretInput, Verifier};
use support::*;

on_both_backends!(
    delivered_request_is_re_signed_with_the_inbox_id_as_idempotency_key,
    target_down_for_a_while_then_up_gets_every_event,
    always_failing_target_goes_dead_then_replay_delivers,
    permanent_4xx_is_dead_at_once,
    retry_after_is_respected,
    older_versions_after_a_newer_one_are_skipped_stale,
    concurrent_arrivals_are_delivered_in_version_order,
);

/// A server on `backend` whose `lab` endpoint delivers to `url`, with
/// more target settings.
fn start(backend: Backend, url: &str, target_settings: &str) -> (Storage, Server) {
    let storage = Storage::new(backend);
    let config = storage
        .config()
        .http_target(url, target_settings)
        .to_string();
    let server = Server::start(storage.dir.path(), &config);
    (storage, server)
}

/// Waits until the event `event_id` has `status`.
async fn reaches(storage: &Storage, event_id: &str, status: &str, within: Duration) -> bool {
    until(within, || async {
        storage.statuses().await.get(event_id).map(String::as_str) == Some(status)
    })
    .await
}

fn target_verifier() -> Verifier {
    let adapter = adapter_for("standard", &AdapterSettings::default()).unwrap();
    Verifier::new(
        adapter,
        [SecretInput {
            version: "t".into(),
            value: TARGET_SECRET.into(),
            not_before: None,
            not_after: None,
        }],
    )
    .unwrap()
}

async fn delivered_request_is_re_signed_with_the_inbox_id_as_idempotency_key(backend: Backend) {
    let sink = Sink::start().await;
    let (storage, server) = start(backend, &sink.url(), "");
    let body = r#"{"id":"evt_d1","type":"payment.succeeded","amount":5}"#;
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_signed(body, now()),
    )
    .await;
    assert_eq!(answer.status, 200);
    let inbox_id = answer.json()["id"].as_str().unwrap().to_owned();

    assert!(eventually(Duration::from_secs(10), || sink.accepted().len() == 1).await);
    let got = &sink.accepted()[0];
    assert_eq!(got.body, body.as_bytes(), "the raw body, byte for byte");
    assert_eq!(got.header("idempotency-key"), inbox_id);
    assert_eq!(got.header("content-type"), "application/json");
    assert_eq!(got.header("x-hookinbox-provider"), "lab");
    assert_eq!(got.header("x-hookinbox-endpoint"), "lab");
    assert_eq!(got.header("x-hookinbox-event-id"), "evt_d1");
    assert_eq!(got.header("x-hookinbox-event-type"), "payment.succeeded");
    // The internal app verifies one scheme: Standard Webhooks under the target secret.
    let headers: Headers = got
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.to_str().unwrap()))
        .collect();
    let verified = target_verifier()
        .verify(&Request::new(&headers, &got.body), now())
        .expect("the delivery verifies with the target secret");
    assert_eq!(verified.event().unwrap().event_id, inbox_id);

    assert!(reaches(&storage, "evt_d1", "PROCESSED", Duration::from_secs(5)).await);
    // Delivered once: one attempt, settled DELIVERED — a state no worker
    // leases again — and the sink saw that one request.
    let log = storage.deliveries().await;
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!((log[0].status.as_str(), log[0].attempts), ("DELIVERED", 1));
    assert_eq!(sink.received().len(), 1);
}

async fn target_down_for_a_while_then_up_gets_every_event(backend: Backend) {
    // The target's port is bound but nothing listens on it yet.
    let port = ReservedPort::new();
    let (storage, server) = start(backend, &port.url(), "max_attempts = 1000");
    let client = client();
    let mut ids = HashSet::new();
    for n in 0..30 {
        let answer = post(
            &client,
            &server.url("/hooks/lab"),
            &lab_event(&format!("down-{n}")),
        )
        .await;
        assert_eq!(answer.status, 200, "ingress does not depend on the target");
        ids.insert(answer.json()["id"].as_str().unwrap().to_owned());
    }
    // Every delivery was tried, refused, and recorded to be retried: the
    // service has seen the target down and kept every event.
    let tried = until(Duration::from_secs(10), || async {
        let log = storage.deliveries().await;
        log.len() == 30 && log.iter().all(|d| d.attempts >= 1)
    })
    .await;
    let log = storage.deliveries().await;
    assert!(tried, "{log:?}");
    for delivery in &log {
        assert!(
            delivery
                .attempt_log
                .iter()
                .all(|attempt| attempt.outcome == "RETRY"
                    && attempt.error.as_deref() == Some("connect error: connection refused")),
            "{delivery:?}"
        );
    }
    assert!(storage.statuses().await.values().all(|s| s == "ACCEPTED"));

    let sink = Sink::start_on(port).await;
    let all_processed = until(Duration::from_secs(20), || async {
        storage.statuses().await.values().all(|s| s == "PROCESSED")
    })
    .await;
    assert!(all_processed, "{:?}", storage.statuses().await);
    let keys: HashSet<String> = sink
        .accepted()
        .iter()
        .map(|r| r.header("idempotency-key"))
        .collect();
    assert_eq!(keys, ids, "every event delivered, none lost, none foreign");
}

async fn always_failing_target_goes_dead_then_replay_delivers(backend: Backend) {
    let sink = Sink::start().await;
    sink.respond_with(|_, _| (500, vec![]));
    let (storage, server) = start(backend, &sink.url(), "max_attempts = 3");
    let answer = post(&client(), &server.url("/hooks/lab"), &lab_event("doomed")).await;
    let inbox_id = answer.json()["id"].as_str().unwrap().to_owned();

    assert!(reaches(&storage, "doomed", "FAILED", Duration::from_secs(10)).await);
    assert_eq!(sink.received().len(), 3, "exactly the attempt budget");

    let show = std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["events", "show", "--json", "--config"])
        .arg(&server.config_path)
        .arg(&inbox_id)
        .output()
        .unwrap();
    let detail: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(detail["status"], "FAILED");
    assert_eq!(detail["deliveries"][0]["status"], "DEAD");
    assert_eq!(detail["deliveries"][0]["attempts"], 3);
    assert!(detail["deliveries"][0]["last_error"]
        .as_str()
        .unwrap()
        .contains("http 500"));
    assert_eq!(
        detail["deliveries"][0]["attempt_log"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert!(
        detail.get("payload_base64").is_none(),
        "no payload unless asked"
    );
    let show = std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["events", "show", "--payload", "--json", "--config"])
        .arg(&server.config_path)
        .arg(&inbox_id)
        .output()
        .unwrap();
    let detail: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(detail["payload_base64"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        raw,
        lab_event("doomed").body.as_ref(),
        "the raw body as received"
    );

    let list = std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["events", "list", "--status", "failed", "--json", "--config"])
        .arg(&server.config_path)
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], inbox_id.as_str());

    // The target is fixed; the operator replays every failed event.
    sink.respond_with(|_, _| (200, vec![]));
    let replay = std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args([
            "events", "replay", "--status", "failed", "--json", "--config",
        ])
        .arg(&server.config_path)
        .output()
        .unwrap();
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let replayed: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
    assert_eq!(replayed["replayed"], serde_json::json!([inbox_id.as_str()]));

    assert!(reaches(&storage, "doomed", "PROCESSED", Duration::from_secs(10)).await);
    let keys: Vec<String> = sink
        .received()
        .iter()
        .map(|r| r.header("idempotency-key"))
        .collect();
    assert_eq!(keys.len(), 4);
    assert!(
        keys.iter().all(|k| k == &inbox_id),
        "a replay keeps the idempotency key"
    );
}

async fn permanent_4xx_is_dead_at_once(backend: Backend) {
    let sink = Sink::start().await;
    sink.respond_with(|_, _| (422, vec![]));
    let (storage, server) = start(backend, &sink.url(), "");
    post(&client(), &server.url("/hooks/lab"), &lab_event("rejected")).await;
    assert!(reaches(&storage, "rejected", "FAILED", Duration::from_secs(10)).await);
    assert_eq!(sink.received().len(), 1);
    let log = storage.deliveries().await;
    assert_eq!((log[0].status.as_str(), log[0].attempts), ("DEAD", 1));
}

async fn retry_after_is_respected(backend: Backend) {
    let sink = Sink::start().await;
    sink.respond_with(|n, _| {
        if n == 0 {
            (429, vec![("retry-after".into(), "2".into())])
        } else {
            (200, vec![])
        }
    });
    let (storage, server) = start(backend, &sink.url(), "");
    post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_event("slow-down"),
    )
    .await;
    assert!(reaches(&storage, "slow-down", "PROCESSED", Duration::from_secs(10)).await);
    // The schedule the worker recorded for the retry is the target's
    // Retry-After, exactly: not the jittered backoff of milliseconds.
    let log = storage.deliveries().await;
    let [first, second] = &log[0].attempt_log[..] else {
        panic!("two attempts: {log:?}")
    };
    assert_eq!(first.outcome, "RETRY");
    assert!(first.error.as_deref().unwrap_or_default().contains("429"));
    let logs = server.logs();
    let scheduled = logs
        .lines()
        .filter(|line| line.contains("Delivery attempt failed; will retry."))
        .map(|line| line.rsplit("retry_in_ms=").next().unwrap_or_default())
        .collect::<Vec<_>>();
    assert_eq!(scheduled, ["2000"], "{logs}");
    // And it was kept: the retry went out once it was due, on the service's
    // clock and on the target's.
    assert_eq!(second.outcome, "DELIVERED");
    assert!(
        second.finished_at_ms - first.finished_at_ms >= 2_000,
        "{log:?}"
    );
    let received = sink.received();
    assert_eq!(received.len(), 2);
    let gap = received[1].at - received[0].at;
    assert!(
        gap >= Duration::from_secs(2),
        "retried after {gap:?}, before Retry-After"
    );
}

fn versioned(id: &str, version: i64) -> Signed {
    lab_signed(
        format!(
            r#"{{"id":"{id}","type":"order.updated","object_id":"order_1","object_version":{version}}}"#
        ),
        now(),
    )
}

fn delivered_versions(sink: &Sink) -> Vec<i64> {
    sink.accepted()
        .iter()
        .map(|r| {
            let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            body["object_version"].as_i64().unwrap()
        })
        .collect()
}

async fn older_versions_after_a_newer_one_are_skipped_stale(backend: Backend) {
    let sink = Sink::start().await;
    let (storage, server) = start(backend, &sink.url(), "");
    let client = client();
    // Version 3 arrives first and is delivered; then 1 and 2 arrive.
    assert_eq!(
        post(&client, &server.url("/hooks/lab"), &versioned("v3", 3))
            .await
            .status,
        200
    );
    assert!(eventually(Duration::from_secs(10), || sink.accepted().len() == 1).await);
    for (id, version) in [("v1", 1), ("v2", 2)] {
        assert_eq!(
            post(&client, &server.url("/hooks/lab"), &versioned(id, version))
                .await
                .status,
            200
        );
    }
    let settled = until(Duration::from_secs(10), || async {
        let status = storage.statuses().await;
        status.len() == 3 && status.values().all(|s| s == "PROCESSED")
    })
    .await;
    assert!(settled, "{:?}", storage.statuses().await);
    // Every delivery is settled for good: 3 delivered in one attempt, 1 and
    // 2 skipped without ever being sent.
    let settled: Vec<(String, String, i64, usize)> = storage
        .deliveries()
        .await
        .into_iter()
        .map(|d| (d.event_id, d.status, d.attempts, d.attempt_log.len()))
        .collect();
    assert_eq!(
        settled,
        [
            ("v3", "DELIVERED", 1, 1),
            ("v1", "SKIPPED_STALE", 0, 0),
            ("v2", "SKIPPED_STALE", 0, 0)
        ]
        .map(|(id, status, attempts, logged)| (id.into(), status.into(), attempts, logged))
    );
    assert_eq!(
        delivered_versions(&sink),
        vec![3],
        "the state never moves backwards"
    );
}

async fn concurrent_arrivals_are_delivered_in_version_order(backend: Backend) {
    let sink = Sink::start().await;
    let storage = Storage::new(backend);
    let dir = storage.dir.path();
    let config_path = dir.join("hookinbox.toml");
    let config = storage.config().http_target(&sink.url(), "").to_string();
    std::fs::write(&config_path, config).unwrap();
    // Ingress only: the three versions arrive concurrently, in no particular order.
    let mut server = Server::start_with_args(dir, &config_path, &["--no-workers"]);
    let client = client();
    let sends = [("c3", 3), ("c1", 1), ("c2", 2)].map(|(id, version)| {
        let (client, url) = (client.clone(), server.url("/hooks/lab"));
        tokio::spawn(async move { post(&client, &url, &versioned(id, version)).await.status })
    });
    for send in sends {
        assert_eq!(send.await.unwrap(), 200);
    }
    server.kill9();
    // Then workers start: one at a time, in version order.
    let mut worker = std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["work", "--config"])
        .arg(&config_path)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let done = eventually(Duration::from_secs(10), || sink.accepted().len() == 3).await;
    let _ = worker.kill();
    let _ = worker.wait();
    assert!(done, "{:?}", delivered_versions(&sink));
    assert_eq!(delivered_versions(&sink), vec![1, 2, 3]);
}
