//! The CLI: `verify` for one captured request offline, `stats`, and start-up
//! refusing a bad config with a message that names the field.

mod support;

use std::process::{Command, Output};

use support::*;

fn hookinbox(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .output()
        .expect("run hookinbox")
}

const STRIPE_CONFIG: &str = r#"
[storage]
url = "sqlite://inbox.db"

[[endpoint]]
id = "stripe"
provider = "stripe"

[[endpoint.secret]]
version = "2026-11"
value = "whsec_K7d2NewSecretShared0"

[[endpoint.secret]]
version = "2026-05"
value_env = "HOOKINBOX_TEST_OLD_SECRET"
"#;

/// The stripe/previous-secret vector of `crates/hookinbox-verify/tests/vectors/`.
const STRIPE_BODY: &str = r#"{"id":"evt_s1NqWmQ2eZvKYlo2C","object":"event","api_version":"2024-06-20","created":1699999997,"type":"payment_intent.succeeded","livemode":false,"data":{"object":{"id":"pi_s3N","object":"payment_intent","amount":2000,"currency":"usd","status":"succeeded"}}}"#;
const STRIPE_SIG_OLD: &str =
    "t=1699999990,v1=0a4a0d662a0ffe498baabfe08a2492be9fb123b478604c9883f70e3b26f871a0";

fn verify(dir: &std::path::Path, signature: &str, now: &str) -> Output {
    let config = dir.join("hookinbox.toml");
    let body = dir.join("body.json");
    std::fs::write(&config, STRIPE_CONFIG).unwrap();
    std::fs::write(&body, STRIPE_BODY).unwrap();
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .env("HOOKINBOX_TEST_OLD_SECRET", "whsec_M3x9OldSecretShared0")
        .args(["verify", "--config"])
        .arg(&config)
        .args(["--endpoint", "stripe", "--now", now])
        .args(["--header", &format!("Stripe-Signature: {signature}")])
        .args(["--header", "Content-Type: application/json", "--body-file"])
        .arg(&body)
        .output()
        .unwrap()
}

#[test]
fn verify_accepts_and_names_the_matched_version() {
    let dir = tempfile::tempdir().unwrap();
    let out = verify(dir.path(), STRIPE_SIG_OLD, "1700000000");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        verdict,
        serde_json::json!({"accepted": true, "event_id": "evt_s1NqWmQ2eZvKYlo2C", "matched_secret_version": "2026-05"})
    );
}

#[test]
fn verify_explains_a_refusal_without_printing_secrets() {
    let dir = tempfile::tempdir().unwrap();
    // An hour later the signature is stale.
    let out = verify(dir.path(), STRIPE_SIG_OLD, "1700003600");
    assert_eq!(out.status.code(), Some(1));
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        verdict,
        serde_json::json!({"accepted": false, "reason": "timestamp"})
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("3610s old"), "{stderr}");
    assert!(stderr.contains("tolerance 300s"), "{stderr}");

    let wrong = STRIPE_SIG_OLD.replace("0a4a", "0a4b");
    let out = verify(dir.path(), &wrong, "1700000000");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("2026-11, 2026-05"),
        "tried versions are listed: {stderr}"
    );
    for secret in [
        "whsec_K7d2NewSecretShared0",
        "whsec_M3x9OldSecretShared0",
        "K7d2",
        "M3x9",
    ] {
        assert!(!stderr.contains(secret) && !String::from_utf8_lossy(&out.stdout).contains(secret));
    }
}

#[test]
fn bad_configs_stop_start_up_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            STRIPE_CONFIG.replace("provider = \"stripe\"", "provider = \"strype\""),
            "endpoint[0].provider",
        ),
        (
            STRIPE_CONFIG.replace("value_env = \"HOOKINBOX_TEST_OLD_SECRET\"", ""),
            "endpoint[0].secret[1]",
        ),
        (
            STRIPE_CONFIG.replace("HOOKINBOX_TEST_OLD_SECRET", "HOOKINBOX_TEST_UNSET_VAR"),
            "endpoint[0].secret[1].value_env",
        ),
        (
            STRIPE_CONFIG.replace("url = \"sqlite://inbox.db\"", "url = \"mysql://x\""),
            "storage.url",
        ),
        (
            STRIPE_CONFIG.replace("version = \"2026-11\"", "version = \"2026-11\"\ncolour = 1"),
            "colour",
        ),
    ];
    for (text, field) in cases {
        let config = dir.path().join("bad.toml");
        std::fs::write(&config, &text).unwrap();
        let (code, stderr) = serve_refused(
            &config,
            &[("HOOKINBOX_TEST_OLD_SECRET", "whsec_M3x9OldSecretShared0")],
        );
        assert_eq!(code, Some(2), "{field}: {stderr}");
        assert!(stderr.contains(field), "expected `{field}` in: {stderr}");
        assert!(!stderr.contains("whsec_"), "a secret leaked: {stderr}");
    }
}

#[tokio::test]
async fn stats_counts_by_endpoint_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &config(&db, ""));
    let client = client();
    for id in ["a", "b", "c"] {
        assert_eq!(
            post(&client, &server.url("/hooks/lab"), &lab_event(id))
                .await
                .status,
            200
        );
    }
    let out = hookinbox(&[
        "stats",
        "--json",
        "--config",
        server.config_path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["total"], 3);
    assert_eq!(stats["by_status"]["ACCEPTED"], 3);
    assert_eq!(stats["by_endpoint"]["lab"]["ACCEPTED"], 3);
    let bodies: usize = ["a", "b", "c"]
        .map(|id| lab_event(id).body.len())
        .iter()
        .sum();
    assert_eq!(stats["disk"]["payload_log_bytes"], bodies as u64);
    assert_eq!(stats["disk"]["payload_segments"], 1);
    assert!(stats["disk"]["database_bytes"].as_u64().unwrap() > 0);
}
