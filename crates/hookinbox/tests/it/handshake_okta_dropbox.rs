//! Okta's and Dropbox's URL verification through the real binary (issue
//! #23): Okta's `GET` with `X-Okta-Verification-Challenge` answered
//! `{"verification": …}`, Dropbox's `GET ?challenge=` echoed as text, nothing
//! stored; then their events authenticated by the hook's secret, a wrong one
//! refused 401 with nothing stored, and no secret in the service's log.

use crate::support;

use support::*;

const OKTA_SECRET: &str = "Bearer okta-test-hook-secret-7d1f";
const DROPBOX_SECRET: &str = "dropbox-test-app-secret-52ac";

fn extra() -> String {
    format!(
        r#"
[[endpoint]]
id = "okta"
provider = "okta"
[[endpoint.secret]]
version = "1"
value = "{OKTA_SECRET}"

[[endpoint]]
id = "dropbox"
provider = "dropbox"
[[endpoint.secret]]
version = "1"
value = "{DROPBOX_SECRET}"
"#
    )
}

fn request(headers: &[(&str, &str)], body: &str) -> Signed {
    Signed {
        headers: headers
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .chain([("content-type".to_owned(), "application/json".to_owned())])
            .collect(),
        body: body.to_owned().into(),
    }
}

fn okta_event(event_id: &str) -> String {
    format!(
        r#"{{"eventType":"com.okta.event_hook","eventTypeVersion":"1.0","eventId":"{event_id}","eventTime":"2026-01-01T00:00:00.000Z","data":{{"events":[{{"uuid":"u-1","eventType":"user.session.start","displayMessage":"okta-body-marker","target":[{{"id":"00uTest","type":"User"}}]}}]}}}}"#
    )
}

#[tokio::test]
async fn okta_verification_and_events() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &config(&db, &extra()));
    let client = client();
    let url = server.url("/hooks/okta");

    // The one-time verification: the challenge comes back as JSON.
    let challenge = "X5ucbEZ9pTBoQmgkR6thGYAX3WUc6JWmrAgeWyTAJ1Bi";
    let get = send(
        &client,
        "GET",
        &url,
        &request(&[("x-okta-verification-challenge", challenge)], ""),
    )
    .await
    .unwrap();
    assert_eq!(get.status, 200);
    assert_eq!(
        get.headers["content-type"].to_str().unwrap(),
        "application/json"
    );
    assert_eq!(get.headers["x-content-type-options"], "nosniff");
    assert_eq!(get.json(), serde_json::json!({ "verification": challenge }));
    // A GET without the header, or with markup in it, is not one.
    for challenge in [None, Some("<script>")] {
        let headers: Vec<(&str, &str)> = challenge
            .map(|c| ("x-okta-verification-challenge", c))
            .into_iter()
            .collect();
        let answer = send(&client, "GET", &url, &request(&headers, ""))
            .await
            .unwrap();
        assert_eq!(answer.status, 405, "{challenge:?}");
    }
    assert!(inbox_rows(&db).is_empty(), "a verification is not an event");

    // Events: a wrong or missing Authorization is refused, nothing stored.
    let wrong = "Bearer okta-wrong-secret-9e0b";
    let body = okta_event("evt-okta-1");
    let answer = post(&client, &url, &request(&[("authorization", wrong)], &body)).await;
    assert_eq!((answer.status, answer.error()), (401, "signature".into()));
    let answer = post(&client, &url, &request(&[], &body)).await;
    assert_eq!(
        (answer.status, answer.error()),
        (401, "missing_signature".into())
    );
    assert!(inbox_rows(&db).is_empty(), "nothing unverified is stored");

    // The configured secret is accepted; Okta's retry is a duplicate.
    let signed = request(&[("authorization", OKTA_SECRET)], &body);
    let answer = post(&client, &url, &signed).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.json()["duplicate"], false);
    let again = post(&client, &url, &signed).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["duplicate"], true);
    let rows = inbox_rows(&db);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].2, "evt-okta-1");

    let logs = server.logs();
    for secret in [
        OKTA_SECRET,
        "okta-test-hook-secret",
        wrong,
        "okta-wrong-secret",
    ] {
        assert!(!logs.contains(secret), "{secret:?} in the log:\n{logs}");
    }
}

#[tokio::test]
async fn dropbox_challenge_and_notifications() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &config(&db, &extra()));
    let client = client();

    // The verification request: the challenge echoed as text, nosniff.
    let challenge = "fYd3wEm9XcQm0d5sZrOlqY4kXo1";
    let get = send(
        &client,
        "GET",
        &server.url(&format!("/hooks/dropbox?challenge={challenge}")),
        &request(&[], ""),
    )
    .await
    .unwrap();
    assert_eq!(get.status, 200);
    assert_eq!(get.body, challenge.as_bytes());
    assert_eq!(
        get.headers["content-type"].to_str().unwrap(),
        "text/plain; charset=utf-8"
    );
    assert_eq!(get.headers["x-content-type-options"], "nosniff");
    assert!(inbox_rows(&db).is_empty(), "a verification is not an event");

    let url = server.url("/hooks/dropbox");
    let body = r#"{"list_folder": {"accounts": ["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]}, "delta": {"users": [12345678]}}"#;
    let sign = |secret: &str| hookinbox_verify::providers::dropbox::sign(secret, body.as_bytes());
    let wrong = "dropbox-wrong-app-secret-0000";
    let forged = post(
        &client,
        &url,
        &request(&[("x-dropbox-signature", sign(wrong).as_str())], body),
    )
    .await;
    assert_eq!((forged.status, forged.error()), (401, "signature".into()));
    assert!(inbox_rows(&db).is_empty(), "nothing unverified is stored");

    // Every signed notification is an event of its own, even with the same
    // body: Dropbox sends no id, and two changes of one account look alike.
    let signature = sign(DROPBOX_SECRET);
    let signed = request(&[("x-dropbox-signature", signature.as_str())], body);
    for _ in 0..2 {
        let answer = post(&client, &url, &signed).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        assert_eq!(answer.json()["duplicate"], false);
        // The id is the receipt's millisecond: the next one is received in
        // a later one (within one millisecond the same body is the same
        // hint, and a duplicate).
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    let rows = inbox_rows(&db);
    assert_eq!(rows.len(), 2);
    for (_, endpoint, event_id) in &rows {
        assert_eq!(endpoint, "dropbox");
        assert!(
            event_id.ends_with(":dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"),
            "{event_id}"
        );
    }
    assert_ne!(rows[0].2, rows[1].2);

    let logs = server.logs();
    for secret in [DROPBOX_SECRET, wrong] {
        assert!(!logs.contains(secret), "{secret:?} in the log:\n{logs}");
    }
}
