//! The admin listener: token-protected Prometheus metrics and readiness,
//! on an address of its own.

mod support;

use std::time::Duration;

use http_body_util::Full;
use support::*;

async fn admin_address(server: &Server) -> String {
    let mut address = None;
    eventually(Duration::from_secs(5), || {
        address = server
            .logs()
            .lines()
            .find(|l| l.contains("Admin listener up."))
            .and_then(|l| l.split("address=").nth(1))
            .map(|a| a.split_whitespace().next().unwrap_or_default().to_owned());
        address.is_some()
    })
    .await;
    address.expect("the admin listener was announced")
}

async fn get(client: &HttpClient, url: &str, token: Option<&str>) -> Answer {
    let mut request = hyper::Request::get(url);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = client
        .request(request.body(Full::default()).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    Answer {
        status,
        headers,
        body,
    }
}

#[tokio::test]
async fn metrics_count_outcomes_and_need_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let extra = "[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"admin-t0ken\"\n";
    let server = Server::start(dir.path(), &config(&db, extra));
    let client = client();
    assert_eq!(
        post(&client, &server.url("/hooks/lab"), &lab_event("m1"))
            .await
            .status,
        200
    );
    assert_eq!(
        post(&client, &server.url("/hooks/lab"), &lab_event("m1"))
            .await
            .status,
        200
    );
    let mut forged = lab_event("m2");
    forged.headers.retain(|(n, _)| n != "x-signature");
    forged.headers.push(("x-signature".into(), "00".repeat(32)));
    assert_eq!(
        post(&client, &server.url("/hooks/lab"), &forged)
            .await
            .status,
        401
    );
    assert_eq!(
        post(&client, &server.url("/hooks/scan-me"), &forged)
            .await
            .status,
        404
    );

    let admin = admin_address(&server).await;
    assert_eq!(
        get(&client, &format!("http://{admin}/metrics"), None)
            .await
            .status,
        401
    );
    assert_eq!(
        get(&client, &format!("http://{admin}/metrics"), Some("wrong"))
            .await
            .status,
        401
    );
    let metrics = get(
        &client,
        &format!("http://{admin}/metrics"),
        Some("admin-t0ken"),
    )
    .await;
    assert_eq!(metrics.status, 200);
    let text = String::from_utf8_lossy(&metrics.body).into_owned();
    for expected in [
        r#"hookinbox_ingress_requests_total{endpoint="lab",outcome="accepted",reason=""} 1"#,
        r#"hookinbox_ingress_requests_total{endpoint="lab",outcome="duplicate",reason=""} 1"#,
        r#"hookinbox_ingress_requests_total{endpoint="lab",outcome="rejected",reason="signature"} 1"#,
        r#"hookinbox_ingress_requests_total{endpoint="_unknown",outcome="rejected",reason="not_found"} 1"#,
        r#"hookinbox_secret_version_matches_total{endpoint="lab",version="v1"} 2"#,
        "hookinbox_ack_duration_seconds_bucket",
        "hookinbox_commit_duration_seconds",
    ] {
        assert!(text.contains(expected), "missing {expected} in:\n{text}");
    }
    assert!(!text.contains(LAB_SECRET));
    assert!(
        !text.contains("scan-me"),
        "unknown endpoint ids are not labels"
    );
    assert_eq!(
        get(
            &client,
            &format!("http://{admin}/readyz"),
            Some("admin-t0ken")
        )
        .await
        .status,
        200
    );
    // The public port does not serve the admin routes.
    assert_eq!(
        get(&client, &server.url("/metrics"), Some("admin-t0ken"))
            .await
            .status,
        404
    );
}
