//! Target transforms and form bodies (docs/delivery.md, "Transformations"
//! and "Form bodies"), through the real binary: a Svix-style script
//! reshapes what an HTTP sink receives, signed over the new bytes, under
//! the same idempotency key on redelivery; a script that loops or
//! allocates without end is stopped at its limits, its delivery DEAD with
//! the reason while another target keeps receiving, and replay delivers
//! once the script is fixed and reloaded; `cancel: true` sends nothing;
//! `hookinbox transform test` prints the request; a form-encoded GitHub
//! delivery with `body = "json"` arrives as JSON, signed over what arrived.
//!
//! The transform runs in the worker whatever the backend, and none of its
//! state is in the database: SQLite only.

use crate::support;

use std::path::Path;
use std::time::Duration;

use hookinbox_verify::{adapter_for, AdapterSettings, Headers, Request, SecretInput, Verifier};
use support::*;

const RENAME: &str = r#"
function handler(webhook) {
  const event = webhook.payload;
  webhook.payload = { kind: webhook.eventType, reference: event.id, cents: event.amount * 100 };
  webhook.headers["X-Team"] = "billing";
  return webhook;
}
"#;

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

/// Verifies `got` as the internal app would: Standard Webhooks under the
/// target secret, over the bytes that arrived.
fn verifies(got: &Received) -> bool {
    let headers: Headers = got
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.to_str().unwrap()))
        .collect();
    target_verifier()
        .verify(&Request::new(&headers, &got.body), now())
        .is_ok()
}

/// An http target table named `name` posting to `url`.
fn http_target(name: &str, url: &str, settings: &str) -> String {
    format!(
        r#"
[[endpoint.target]]
name = "{name}"
kind = "http"
url = "{url}"
secret = "{TARGET_SECRET}"
timeout = "2s"
retry_base = "20ms"
retry_cap = "200ms"
{settings}"#
    )
}

/// Workers that find and retry deliveries within a test's patience.
const FAST_DELIVERY: &str =
    "[delivery]\npoll_interval = \"50ms\"\nlease = \"1s\"\nrescue_interval = \"200ms\"\n";

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

async fn delivery_of(storage: &Storage, inbox_id: &str, target: &str) -> (String, Option<String>) {
    let (detail, _) = storage.event(inbox_id).await;
    let delivery = detail
        .deliveries
        .iter()
        .rev()
        .find(|d| d.target == target)
        .unwrap_or_else(|| panic!("no delivery to {target}: {detail:?}"));
    (delivery.status.clone(), delivery.last_error.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_svix_style_transform_arrives_as_written_signed_over_the_new_bytes_same_key_on_redelivery(
) {
    let sink = Sink::start().await;
    // The first attempt fails: the redelivery must carry the same key and body.
    sink.respond_with(|n, _| if n == 0 { (503, vec![]) } else { (200, vec![]) });
    let storage = Storage::new(Backend::Sqlite);
    write(storage.dir.path(), "rename.js", RENAME);
    let config = storage
        .config()
        .http_target(&sink.url(), r#"transform = "rename.js""#)
        .to_string();
    let server = Server::start(storage.dir.path(), &config);
    let body = r#"{"id":"evt_t1","type":"invoice.paid","amount":12}"#;
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_signed(body, now()),
    )
    .await;
    assert_eq!(answer.status, 200);
    let inbox_id = answer.json()["id"].as_str().unwrap().to_owned();

    assert!(eventually(Duration::from_secs(10), || sink.accepted().len() == 1).await);
    let received = sink.received();
    assert_eq!(received.len(), 2, "one failed attempt, one delivered");
    let got = &received[1];
    assert_eq!(
        json(&got.body),
        serde_json::json!({"kind": "invoice.paid", "reference": "evt_t1", "cents": 1200})
    );
    assert_eq!(got.header("content-type"), "application/json");
    assert_eq!(got.header("x-team"), "billing");
    assert!(verifies(got), "signed over the transformed bytes");
    for attempt in &received {
        assert_eq!(attempt.header("idempotency-key"), inbox_id);
        assert_eq!(attempt.header("webhook-id"), inbox_id);
        assert_eq!(
            attempt.body, got.body,
            "every attempt computes the same body"
        );
    }
    // The stored body is the one received.
    let (_, stored) = storage.event(&inbox_id).await;
    assert_eq!(stored, body.as_bytes());
}

const SPIN: &str = "function handler(webhook) { while (true) {} }";
const HOG: &str = r#"
function handler(webhook) {
  const kept = [];
  for (let i = 0; i < 1024; i++) { kept.push(new Array(128 * 1024).fill(i)); } // 1 GiB
  return webhook;
}"#;
const FIXED: &str = "function handler(webhook) { webhook.payload = { fixed: webhook.payload.id }; return webhook; }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_stopped_at_their_limits_go_dead_while_other_targets_deliver_and_replay_after_a_fix(
) {
    let (spin_sink, hog_sink, plain_sink) = (
        Sink::start().await,
        Sink::start().await,
        Sink::start().await,
    );
    let storage = Storage::new(Backend::Sqlite);
    write(storage.dir.path(), "spin.js", SPIN);
    write(storage.dir.path(), "hog.js", HOG);
    let config = storage
        .config()
        .extra(FAST_DELIVERY)
        .extra(&http_target(
            "spin",
            &spin_sink.url(),
            r#"transform = "spin.js""#,
        ))
        .extra(&http_target(
            "hog",
            &hog_sink.url(),
            r#"transform = "hog.js""#,
        ))
        .extra(&http_target("plain", &plain_sink.url(), ""))
        .to_string();
    let server = Server::start(storage.dir.path(), &config);
    const EVENTS: usize = 6;
    let mut inbox_ids = Vec::new();
    for n in 0..EVENTS {
        let answer = post(
            &client(),
            &server.url("/hooks/lab"),
            &lab_event(&format!("evt_limit_{n}")),
        )
        .await;
        assert_eq!(answer.status, 200);
        inbox_ids.push(answer.json()["id"].as_str().unwrap().to_owned());
    }
    // Each looping call holds a transform thread for its whole second, so
    // the six take three seconds at least; the plain target has every event
    // long before.
    assert!(
        eventually(Duration::from_secs(20), || plain_sink.accepted().len()
            == EVENTS)
        .await
    );
    let mut spin_dead_then = 0;
    for id in &inbox_ids {
        if delivery_of(&storage, id, "spin").await.0 == "DEAD" {
            spin_dead_then += 1;
        }
    }
    assert!(
        spin_dead_then < EVENTS,
        "the plain target was served while looping scripts were still being stopped"
    );
    let all_dead = until(Duration::from_secs(60), || async {
        for id in &inbox_ids {
            for target in ["spin", "hog"] {
                if delivery_of(&storage, id, target).await.0 != "DEAD" {
                    return false;
                }
            }
        }
        true
    })
    .await;
    assert!(all_dead, "every spin and hog delivery ends DEAD");
    for id in &inbox_ids {
        let (_, error) = delivery_of(&storage, id, "spin").await;
        assert_eq!(
            error.as_deref(),
            Some("permanent: transform: the handler ran past its time limit of 1000 ms")
        );
        let (_, error) = delivery_of(&storage, id, "hog").await;
        assert_eq!(
            error.as_deref(),
            Some("permanent: transform: the handler went over its memory limit of 64 MiB")
        );
    }
    assert!(spin_sink.received().is_empty() && hog_sink.received().is_empty());
    assert!(
        server.rss_bytes() < 512 * 1024 * 1024,
        "the 1 GiB was never allocated"
    );

    // The operator fixes the script, reloads, and replays the failed events.
    write(storage.dir.path(), "spin.js", FIXED);
    sighup(&server);
    logged(&server, "Reloaded a transform.", 2).await;
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
    assert!(
        eventually(Duration::from_secs(20), || spin_sink.accepted().len()
            == EVENTS)
        .await
    );
    let mut fixed: Vec<String> = spin_sink
        .accepted()
        .iter()
        .map(|got| json(&got.body)["fixed"].as_str().unwrap().to_owned())
        .collect();
    fixed.sort();
    let expected: Vec<String> = (0..EVENTS).map(|n| format!("evt_limit_{n}")).collect();
    assert_eq!(fixed, expected);
    // Replay delivered to the plain target again too (it replays the event); its key is stable.
    assert!(plain_sink
        .accepted()
        .iter()
        .all(|got| inbox_ids.contains(&got.header("idempotency-key"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_true_sends_nothing_and_the_delivery_is_done_and_says_so() {
    let sink = Sink::start().await;
    let storage = Storage::new(Backend::Sqlite);
    write(
        storage.dir.path(),
        "cancel.js",
        "function handler(webhook) { if (webhook.payload.id === 'evt_skip') { webhook.cancel = true; } return webhook; }",
    );
    let config = storage
        .config()
        .http_target(&sink.url(), r#"transform = "cancel.js""#)
        .to_string();
    let server = Server::start(storage.dir.path(), &config);
    let skipped = post(&client(), &server.url("/hooks/lab"), &lab_event("evt_skip")).await;
    let skipped = skipped.json()["id"].as_str().unwrap().to_owned();
    let sent = post(&client(), &server.url("/hooks/lab"), &lab_event("evt_send")).await;
    assert_eq!(sent.status, 200);
    assert!(eventually(Duration::from_secs(10), || sink.accepted().len() == 1).await);
    let done = until(Duration::from_secs(10), || async {
        storage.statuses().await.get("evt_skip").map(String::as_str) == Some("PROCESSED")
    })
    .await;
    assert!(done, "a cancelled delivery is done");
    let (status, error) = delivery_of(&storage, &skipped, "sink").await;
    assert_eq!(status, "DELIVERED");
    assert_eq!(
        error.as_deref(),
        Some("cancelled by the transform: nothing was sent")
    );
    assert_eq!(sink.received().len(), 1);
    assert_eq!(json(&sink.received()[0].body)["id"], "evt_send");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transform_test_prints_the_transformed_request() {
    let storage = Storage::new(Backend::Sqlite);
    write(storage.dir.path(), "rename.js", RENAME);
    write(
        storage.dir.path(),
        "broken.js",
        "function handler(w) {\n  throw new TypeError('no ' + w.payload.id);\n}",
    );
    let config = storage
        .config()
        .http_target("http://127.0.0.1:9/orders", r#"transform = "rename.js""#)
        .extra(&http_target(
            "broken",
            "http://127.0.0.1:9/",
            r#"transform = "broken.js""#,
        ))
        .to_string();
    let config_path = storage.dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, &config).unwrap();
    write(
        storage.dir.path(),
        "body.json",
        r#"{"id":"evt_cli","amount":3}"#,
    );
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
            .arg("transform")
            .arg("test")
            .arg("--config")
            .arg(&config_path)
            .args(args)
            .output()
            .unwrap()
    };
    let body_file = storage.dir.path().join("body.json");
    let body_file = body_file.to_str().unwrap();
    let printed = run(&[
        "--target",
        "lab/sink",
        "--body-file",
        body_file,
        "--event-type",
        "invoice.paid",
    ]);
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let text = String::from_utf8(printed.stdout).unwrap();
    let (head, body) = text.split_once("\n\n").unwrap();
    assert_eq!(
        head,
        "POST http://127.0.0.1:9/orders\ncontent-type: application/json\nidempotency-key: transform-test\nx-team: billing"
    );
    assert_eq!(
        json(body.trim().as_bytes()),
        serde_json::json!({"kind": "invoice.paid", "reference": "evt_cli", "cents": 300})
    );

    // A stored event, by its inbox id.
    let server = Server::start_with(storage.dir.path(), &config_path);
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_signed(r#"{"id":"evt_stored","type":"x","amount":7}"#, now()),
    )
    .await;
    let inbox_id = answer.json()["id"].as_str().unwrap().to_owned();
    let printed = run(&["--target", "lab/sink", "--event", &inbox_id]);
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let text = String::from_utf8(printed.stdout).unwrap();
    assert!(
        text.contains(&format!("idempotency-key: {inbox_id}\n")),
        "{text}"
    );
    assert!(text.contains(r#""reference":"evt_stored""#), "{text}");

    // A failing script: exit 1, and here (only) the exception's message.
    let failed = run(&["--target", "lab/broken", "--body-file", body_file]);
    assert_eq!(failed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains("the handler threw TypeError at line 2: no evt_cli"),
        "{stderr}"
    );
}

const GITHUB_SECRET: &str = "github form test secret";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_encoded_github_delivery_with_body_json_arrives_as_json_signed_over_what_arrived() {
    // The repository's GitHub sample, sent the way a webhook set to
    // `application/x-www-form-urlencoded` sends it: `payload=<the JSON>`.
    let sample = include_str!("../../../hookinbox-verify/tests/fixtures/github.jsonl")
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|line| line["name"] == "github/valid")
        .unwrap();
    use base64::Engine as _;
    let github_json = base64::engine::general_purpose::STANDARD
        .decode(sample["request"]["body_b64"].as_str().unwrap())
        .unwrap();
    let form: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", std::str::from_utf8(&github_json).unwrap())
        .finish();

    let (json_sink, raw_sink) = (Sink::start().await, Sink::start().await);
    let storage = Storage::new(Backend::Sqlite);
    let config = storage
        .config()
        .extra(FAST_DELIVERY)
        .endpoint("github", "github", "", GITHUB_SECRET)
        .extra(&http_target("app", &json_sink.url(), r#"body = "json""#))
        .extra(&http_target("raw", &raw_sink.url(), ""))
        .to_string();
    let server = Server::start(storage.dir.path(), &config);
    let mut request = github_signed(GITHUB_SECRET, &form, "delivery-form-1");
    for (name, value) in request.headers.iter_mut() {
        if name == "content-type" {
            *value = "application/x-www-form-urlencoded".into();
        }
    }
    let answer = post(&client(), &server.url("/hooks/github"), &request).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let inbox_id = answer.json()["id"].as_str().unwrap().to_owned();

    assert!(
        eventually(Duration::from_secs(10), || json_sink.accepted().len() == 1
            && raw_sink.accepted().len() == 1)
        .await
    );
    let got = &json_sink.accepted()[0];
    assert_eq!(got.header("content-type"), "application/json");
    assert_eq!(
        json(&got.body),
        json(&github_json),
        "GitHub's own JSON document"
    );
    assert!(verifies(got), "signed over the delivered JSON bytes");
    assert_eq!(got.header("idempotency-key"), inbox_id);
    // Without `body = "json"`, the form as received; the stored body stays raw.
    let raw = &raw_sink.accepted()[0];
    assert_eq!(raw.body, form.as_bytes());
    assert_eq!(
        raw.header("content-type"),
        "application/x-www-form-urlencoded"
    );
    assert!(verifies(raw));
    let (_, stored) = storage.event(&inbox_id).await;
    assert_eq!(stored, form.as_bytes());
}

#[test]
fn a_script_that_does_not_load_stops_config_check_naming_the_target_and_line() {
    let storage = Storage::new(Backend::Sqlite);
    write(
        storage.dir.path(),
        "broken.js",
        "function handler(w) {\n  return w.;\n}",
    );
    write(
        storage.dir.path(),
        "none.js",
        "function transform(w) { return w; }",
    );
    for (script, expected) in [
        ("broken.js", "SyntaxError"),
        ("none.js", "defines no function `handler(webhook)`"),
    ] {
        let config = storage
            .config()
            .http_target("http://127.0.0.1:9/", &format!("transform = \"{script}\""))
            .to_string();
        let config_path = storage.dir.path().join("hookinbox.toml");
        std::fs::write(&config_path, &config).unwrap();
        let checked = std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
            .args(["config", "check", "--config"])
            .arg(&config_path)
            .output()
            .unwrap();
        assert!(!checked.status.success());
        let stderr = String::from_utf8_lossy(&checked.stderr);
        assert!(
            stderr.contains("endpoint[0].target[0].transform") && stderr.contains("target `sink`"),
            "{stderr}"
        );
        assert!(stderr.contains(expected), "{stderr}");
        if script == "broken.js" {
            assert!(stderr.contains("line 2"), "{stderr}");
        }
    }
}
