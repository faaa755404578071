//! The admin listener: token-protected Prometheus metrics and readiness,
//! on an address of its own, with its own limits: a header/idle timeout, a
//! connection cap, a `Host` allowlist and start-up rules for the token.

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::Full;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A token long enough for the start-up rule (16 characters or more).
const TOKEN: &str = "admin-t0ken-for-tests";

async fn get(client: &HttpClient, url: &str, token: Option<&str>) -> Answer {
    let authorization = token.map(|token| format!("Bearer {token}"));
    get_with(client, url, authorization.as_deref(), None).await
}

/// A GET with this `Authorization` value and `Host` (default: the URL's).
async fn get_with(
    client: &HttpClient,
    url: &str,
    authorization: Option<&str>,
    host: Option<&str>,
) -> Answer {
    let mut request = hyper::Request::get(url);
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
    }
    if let Some(host) = host {
        request = request.header("host", host);
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
    let extra = &format!("[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n");
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

    let admin = server.admin_address().await;
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
    let metrics = get(&client, &format!("http://{admin}/metrics"), Some(TOKEN)).await;
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
        get(&client, &format!("http://{admin}/readyz"), Some(TOKEN))
            .await
            .status,
        200
    );
    // The public port does not serve the admin routes.
    assert_eq!(
        get(&client, &server.url("/metrics"), Some(TOKEN))
            .await
            .status,
        404
    );
}

/// Starts `serve` with this `[admin]` section (plus `listen` on port 0
/// unless the section sets it) and returns it with the admin address.
async fn start_admin(dir: &std::path::Path, admin: &str) -> (Server, SocketAddr) {
    let listen = if admin.contains("listen") {
        ""
    } else {
        "listen = \"127.0.0.1:0\"\n"
    };
    let extra = format!("[admin]\n{listen}{admin}");
    let server = Server::start(dir, &config(&dir.join("inbox.db"), &extra));
    let address = server.admin_address().await;
    (server, address)
}

#[test]
fn weak_tokens_and_an_exposed_address_without_one_stop_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    // (admin section, environment, field named, reason given)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: [Case; 5] = [
        (
            "listen = \"127.0.0.1:0\"\ntoken = \"\"",
            &[],
            "admin.token: ",
            "empty",
        ),
        (
            "listen = \"127.0.0.1:0\"\ntoken = \"fifteen-chars-x\"",
            &[],
            "admin.token: ",
            "at least 16",
        ),
        (
            "listen = \"127.0.0.1:0\"\ntoken_env = \"HOOKINBOX_ADMIN_TOKEN\"",
            &[("HOOKINBOX_ADMIN_TOKEN", "")],
            "admin.token_env: ",
            "empty",
        ),
        (
            "listen = \"127.0.0.1:0\"\ntoken_env = \"HOOKINBOX_ADMIN_TOKEN\"",
            &[("HOOKINBOX_ADMIN_TOKEN", "short")],
            "admin.token_env: ",
            "at least 16",
        ),
        (
            "listen = \"0.0.0.0:0\"",
            &[],
            "admin.token: ",
            "not a loopback address",
        ),
    ];
    for (admin, env, field, why) in cases {
        let path = dir.path().join("refused.toml");
        std::fs::write(&path, config(&db, &format!("[admin]\n{admin}\n"))).unwrap();
        let (code, stderr) = serve_refused(&path, env);
        assert_eq!(code, Some(2), "{admin}: {stderr}");
        assert!(
            stderr.contains(field),
            "expected `{field}` for {admin}: {stderr}"
        );
        assert!(
            stderr.contains(why),
            "expected `{why}` for {admin}: {stderr}"
        );
        assert!(
            !stderr.contains("fifteen-chars-x"),
            "the token leaked: {stderr}"
        );
    }
}

#[tokio::test]
async fn the_bearer_scheme_is_any_case_and_healthz_needs_no_token() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, admin) = start_admin(dir.path(), &format!("token = \"{TOKEN}\"\n")).await;
    let client = client();
    let metrics = format!("http://{admin}/metrics");
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let authorization = format!("{scheme} {TOKEN}");
        let answer = get_with(&client, &metrics, Some(&authorization), None).await;
        assert_eq!(answer.status, 200, "{scheme}");
    }
    let wrong = get_with(&client, &metrics, Some(&format!("Basic {TOKEN}")), None).await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.headers["www-authenticate"], "Bearer");
    assert_eq!(get(&client, &metrics, Some("")).await.status, 401);
    assert_eq!(
        get(&client, &format!("http://{admin}/readyz"), None)
            .await
            .status,
        401
    );
    let health = get(&client, &format!("http://{admin}/healthz"), None).await;
    assert_eq!(health.status, 200);
    assert_eq!(&health.body[..], b"ok");
}

#[tokio::test]
async fn readyz_names_no_failing_check_when_ready() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, admin) = start_admin(dir.path(), "").await;
    let answer = get(&client(), &format!("http://{admin}/readyz"), None).await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.json(),
        serde_json::json!({"ready": true, "failing": []})
    );
}

#[tokio::test]
async fn only_allowed_hosts_reach_the_admin_listener() {
    let dir = tempfile::tempdir().unwrap();
    // A listed host is compared whole, port included, whatever port the
    // listener has: the name and port a proxy in front of it answers on.
    let (_server, admin) = start_admin(
        dir.path(),
        &format!(
            "token = \"{TOKEN}\"\n\
             allowed_hosts = [\"admin.internal:8443\", \"metrics.example\"]\n"
        ),
    )
    .await;
    let port = admin.port();
    let client = client();
    let bearer = format!("Bearer {TOKEN}");
    let status = |path: &'static str, host: String| {
        let client = client.clone();
        let bearer = bearer.clone();
        let url = format!("http://{admin}{path}");
        async move {
            get_with(&client, &url, Some(&bearer), Some(&host))
                .await
                .status
        }
    };
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "admin.internal:8443".to_owned(),
        "ADMIN.internal:8443".to_owned(),
        "metrics.example".to_owned(),
    ] {
        assert_eq!(status("/metrics", host.clone()).await, 200, "{host}");
    }
    // A rebound name: the browser sends the attacker's host name, with or
    // without the right token.
    for host in [
        format!("evil.example:{port}"),
        format!("admin.internal.evil.example:{port}"),
        format!("localhost:{}", port.wrapping_add(1)),
        "admin.internal".to_owned(),
        format!("admin.internal:{port}"),
    ] {
        assert_eq!(status("/metrics", host.clone()).await, 421, "{host}");
        assert_eq!(status("/healthz", host.clone()).await, 421, "{host}");
    }
    let unauthenticated = get_with(
        &client,
        &format!("http://{admin}/metrics"),
        None,
        Some(&format!("evil.example:{port}")),
    )
    .await;
    assert_eq!(unauthenticated.status, 421, "the Host check comes first");
}

/// Reads until the server closes the connection; panics if it does not
/// within `limit` (the test's bound, far above the configured timeout).
async fn read_until_closed(stream: &mut tokio::net::TcpStream, limit: Duration) -> Vec<u8> {
    let mut received = Vec::new();
    tokio::time::timeout(limit, stream.read_to_end(&mut received))
        .await
        .expect("the admin listener closed the idle connection")
        .expect("read");
    received
}

#[tokio::test]
async fn idle_admin_connections_are_closed_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, admin) = start_admin(dir.path(), "header_read_timeout = \"300ms\"\n").await;

    // A connection that never sends a byte. The clock starts before the
    // connect: the server's timer starts at its accept, which is later.
    let opened = std::time::Instant::now();
    let mut silent = tokio::net::TcpStream::connect(&admin).await.unwrap();
    assert!(read_until_closed(&mut silent, Duration::from_secs(10))
        .await
        .is_empty());
    assert!(opened.elapsed() >= Duration::from_millis(300));

    // A keep-alive connection after its answer.
    let mut keep_alive = tokio::net::TcpStream::connect(&admin).await.unwrap();
    keep_alive
        .write_all(format!("GET /healthz HTTP/1.1\r\nhost: {admin}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let received = read_until_closed(&mut keep_alive, Duration::from_secs(10)).await;
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.ends_with("ok"), "{text}");
}

#[tokio::test]
async fn connections_past_the_admin_cap_wait_for_a_free_slot() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, admin) = start_admin(
        dir.path(),
        "max_connections = 1\nheader_read_timeout = \"1s\"\n",
    )
    .await;
    // Holds the only slot until its idle timeout closes it.
    let holder = std::net::TcpStream::connect(admin).unwrap();
    holder.set_nonblocking(true).unwrap();

    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        get(&client(), &format!("http://{admin}/healthz"), None),
    )
    .await
    .expect("answered once the slot was free");
    assert_eq!(answer.status, 200);

    // The answer came only after the holder was closed: the server closes
    // a connection before it gives its slot to the next one.
    let mut byte = [0u8; 1];
    let read = std::io::Read::read(&mut &holder, &mut byte);
    assert!(
        matches!(read, Ok(0)),
        "the holder was still open when the second connection was served: {read:?}"
    );
}
