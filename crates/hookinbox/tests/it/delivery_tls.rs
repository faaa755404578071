//! Delivery to `https://` targets through the real binary: a TLS sink under a
//! throwaway CA made at test time, trusted only through the target's
//! `ca_file`; the same sink refused under the default (Mozilla) roots or for
//! the wrong host name; and the start-up errors of a bad scheme or `ca_file`.

use crate::support;

use std::time::Duration;

use support::*;

/// Accepts one `lab` event and returns its inbox id.
async fn accept_one(server: &Server, event_id: &str) -> String {
    let answer = post(&client(), &server.url("/hooks/lab"), &lab_event(event_id)).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.json()["id"].as_str().unwrap().to_owned()
}

/// Waits until the only delivery row has a TLS error, and returns it.
async fn tls_failure(db: &std::path::Path) -> (String, String) {
    let mut last = None;
    let failed = eventually(Duration::from_secs(10), || {
        last = deliveries(db).pop();
        matches!(&last, Some((_, Some(error))) if error.starts_with("tls "))
    })
    .await;
    assert!(failed, "no TLS error recorded: {last:?}");
    let (status, error) = last.unwrap();
    (status, error.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_target_under_its_ca_file_gets_the_re_signed_delivery() {
    let pki = TestPki::new(&["localhost", "127.0.0.1"]);
    let sink = Sink::start_tls(&pki).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    // Relative: resolved against the config file's directory.
    std::fs::write(dir.path().join("internal-ca.pem"), &pki.ca_pem).unwrap();
    let server = Server::start(
        dir.path(),
        &config_with_target(&db, &sink.https_url(), "ca_file = \"internal-ca.pem\"", ""),
    );

    let inbox_id = accept_one(&server, "evt_tls1").await;

    assert!(eventually(Duration::from_secs(10), || sink.accepted().len() == 1).await);
    let got = &sink.accepted()[0];
    assert_eq!(got.header("idempotency-key"), inbox_id);
    assert_eq!(got.header("webhook-id"), inbox_id);
    assert!(got.header("webhook-signature").starts_with("v1,"));
    assert_eq!(got.header("x-hookinbox-event-id"), "evt_tls1");
    assert!(
        eventually(Duration::from_secs(5), || inbox_status(&db)["evt_tls1"]
            == "PROCESSED")
        .await
    );
    assert_eq!(deliveries(&db)[0].0, "DELIVERED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_ca_file_a_private_ca_is_not_trusted() {
    let pki = TestPki::new(&["localhost", "127.0.0.1"]);
    let sink = Sink::start_tls(&pki).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(
        dir.path(),
        &config_with_target(&db, &sink.https_url(), "", ""),
    );

    accept_one(&server, "evt_tls2").await;

    let (status, error) = tls_failure(&db).await;
    assert_ne!(status, "DELIVERED");
    assert_eq!(error, "tls certificate error: not issued by a trusted CA");
    assert!(!error.contains("127.0.0.1"), "the URL leaked: {error}");
    assert!(
        sink.received().is_empty(),
        "no request crossed the refused TLS"
    );
    assert_ne!(inbox_status(&db)["evt_tls2"], "PROCESSED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_host_name_is_refused() {
    // Issued by the trusted CA, but not for the address the URL names.
    let pki = TestPki::new(&["billing.internal"]);
    let sink = Sink::start_tls(&pki).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    std::fs::write(dir.path().join("ca.pem"), &pki.ca_pem).unwrap();
    let server = Server::start(
        dir.path(),
        &config_with_target(&db, &sink.https_url(), "ca_file = \"ca.pem\"", ""),
    );

    accept_one(&server, "evt_tls3").await;

    let (status, error) = tls_failure(&db).await;
    assert_ne!(status, "DELIVERED");
    assert_eq!(
        error,
        "tls certificate error: not valid for the target's host name"
    );
    assert!(!error.contains("billing.internal"), "{error}");
    assert!(sink.received().is_empty());
}

#[test]
fn bad_scheme_or_ca_file_stops_serve_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    std::fs::write(
        dir.path().join("not-a-ca.pem"),
        "private-looking-content-7f3a\n",
    )
    .unwrap();
    let cases = [
        (
            config_with_target(&db, "ftp://127.0.0.1:9/internal", "", ""),
            "endpoint[0].target[0].url",
        ),
        (
            config_with_target(
                &db,
                "https://127.0.0.1:9/internal",
                "ca_file = \"missing-ca.pem\"",
                "",
            ),
            "endpoint[0].target[0].ca_file",
        ),
        (
            config_with_target(
                &db,
                "https://127.0.0.1:9/internal",
                "ca_file = \"not-a-ca.pem\"",
                "",
            ),
            "endpoint[0].target[0].ca_file",
        ),
    ];
    for (text, field) in cases {
        let config = dir.path().join("bad.toml");
        std::fs::write(&config, &text).unwrap();
        let (code, stderr) = serve_refused(&config, &[]);
        assert_eq!(code, Some(2), "{field}: {stderr}");
        assert!(stderr.contains(field), "expected `{field}` in: {stderr}");
        assert!(
            !stderr.contains("private-looking-content"),
            "the file's contents leaked: {stderr}"
        );
    }
}
