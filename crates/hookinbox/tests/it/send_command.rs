//! `hookinbox send` against a running `serve`: a request signed as each of
//! several providers (header, timestamped, token and Standard Webhooks
//! schemes) is accepted and stored, and one signed with the wrong secret is
//! refused with 401 and a non-zero exit.

use crate::support;

use std::process::{Command, Output};

use support::*;

const STRIPE_SECRET: &str = "whsec_SendTestStripeSecret0001";
const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const GITHUB_SECRET: &str = "send-test-github-secret";
const GITLAB_TOKEN: &str = "send-test-gitlab-token";
const SLACK_SECRET: &str = "send-test-slack-signing-secret";

/// Runs `hookinbox send` with the secret in `SEND_TEST_SECRET`.
fn send(secret: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .arg("send")
        .args(["--secret-env", "SEND_TEST_SECRET"])
        .args(args)
        .env("SEND_TEST_SECRET", secret)
        .output()
        .expect("run hookinbox send")
}

/// The `--json` answer of one `send`.
fn answer(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {:?}, stderr {:?}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The receiver's own answer inside `send`'s.
fn receiver_body(answer: &serde_json::Value) -> serde_json::Value {
    serde_json::from_str(answer["body"].as_str().expect("body text")).expect("receiver JSON")
}

fn server(dir: &std::path::Path, db: &std::path::Path) -> Server {
    let config = TestConfig::new(db)
        .endpoint("stripe", "stripe", "", STRIPE_SECRET)
        .endpoint("standard", "standard", "", STANDARD_SECRET)
        .endpoint("github", "github", "", GITHUB_SECRET)
        .endpoint("gitlab", "gitlab", "", GITLAB_TOKEN)
        .endpoint("slack", "slack", "", SLACK_SECRET)
        .to_string();
    Server::start(dir, &config)
}

#[test]
fn send_signs_as_each_provider_and_serve_accepts_and_stores_the_event() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = server(dir.path(), &db);
    let cases: [(&str, &str, &[&str], &str); 6] = [
        (
            "stripe",
            STRIPE_SECRET,
            &["--sample", "payment_intent.succeeded"],
            "evt_3SampleHookinboxSend01",
        ),
        (
            "standard",
            STANDARD_SECRET,
            &[
                "--sample",
                "invoice.paid",
                "--event-id",
                "msg_send_standard_1",
            ],
            "msg_send_standard_1",
        ),
        (
            "github",
            GITHUB_SECRET,
            &["--sample", "push", "--event-id", "send-github-delivery-1"],
            "send-github-delivery-1",
        ),
        (
            "gitlab",
            GITLAB_TOKEN,
            &["--sample", "push", "--event-id", "send-gitlab-uuid-1"],
            "send-gitlab-uuid-1",
        ),
        (
            "slack",
            SLACK_SECRET,
            &["--sample", "app_mention"],
            "Ev0FIXTURE01",
        ),
        ("lab", LAB_SECRET, &["--sample", "thing.done"], "evt_lab_1"),
    ];
    for (provider, secret, args, event_id) in cases {
        let url = server.url(&format!("/hooks/{provider}"));
        let mut all = vec!["--provider", provider, "--json"];
        all.extend_from_slice(args);
        all.push(&url);
        let output = send(secret, &all);
        let answer = answer(&output);
        assert!(output.status.success(), "{provider}: {answer}");
        assert_eq!(answer["status"], 200, "{provider}: {answer}");
        let receiver = receiver_body(&answer);
        assert_eq!(receiver["accepted"], true, "{provider}: {receiver}");
        assert_eq!(receiver["duplicate"], false, "{provider}: {receiver}");
        let stored = inbox_rows(&db);
        assert!(
            stored.iter().any(|(id, endpoint, provider_event_id)| id
                == receiver["id"].as_str().unwrap()
                && endpoint == provider
                && provider_event_id == event_id),
            "{provider}: {event_id} not stored as {receiver}: {stored:?}"
        );
    }
    assert_eq!(inbox_rows(&db).len(), 6);
}

#[test]
fn send_with_a_wrong_secret_is_refused_401_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = server(dir.path(), &db);
    let url = server.url("/hooks/stripe");
    let output = send(
        "whsec_NotTheEndpointsSecret000",
        &[
            "--provider",
            "stripe",
            "--sample",
            "payment_intent.succeeded",
            &url,
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("401"), "{stdout}");
    let body: serde_json::Value =
        serde_json::from_str(lines.next().expect("the receiver's body")).expect("JSON");
    assert_eq!(body["error"], "signature", "{body}");
    assert!(inbox_rows(&db).is_empty());
}

#[test]
fn send_lists_its_samples_and_refuses_what_it_cannot_sign() {
    let output = send("unused", &["--sample", "list"]);
    assert!(output.status.success(), "{output:?}");
    let listed = String::from_utf8_lossy(&output.stdout);
    for (provider, name) in [
        ("stripe", "payment_intent.succeeded"),
        ("github", "push"),
        ("shopify", "orders/create"),
        ("standard", "invoice.paid"),
        ("slack", "app_mention"),
    ] {
        assert!(
            listed
                .lines()
                .any(|line| line.split_whitespace().eq([provider, name])),
            "{provider} {name} not in:\n{listed}"
        );
    }

    let body = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(body.path(), br#"{"id":"1"}"#).unwrap();
    let output = send(
        "a-public-key",
        &[
            "--provider",
            "discord",
            "--body-file",
            body.path().to_str().unwrap(),
            "http://127.0.0.1:9/hooks/discord",
        ],
    );
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("asymmetric"), "{stderr}");
    assert!(
        !stderr.contains("a-public-key"),
        "the secret leaked: {stderr}"
    );
}
