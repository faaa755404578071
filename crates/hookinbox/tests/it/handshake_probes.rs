//! Bodiless probes of a webhook URL through the real binary (issue #23):
//! Trello's `HEAD` when a webhook is created and Nylas's `GET ?challenge=`
//! are answered as those providers document, with nothing stored; every
//! other provider, and an unknown endpoint, still answer 405.

use crate::support;

use support::*;

const TRELLO_SECRET: &str = "trello-test-oauth-secret";
const NYLAS_SECRET: &str = "nylas-test-webhook-secret";

fn extra(trello_url: &str) -> String {
    format!(
        r#"
[[endpoint]]
id = "trello"
provider = "trello"
public_url = "{trello_url}"
[[endpoint.secret]]
version = "1"
value = "{TRELLO_SECRET}"

[[endpoint]]
id = "nylas"
provider = "nylas"
[[endpoint.secret]]
version = "1"
value = "{NYLAS_SECRET}"
"#
    )
}

fn bodiless() -> Signed {
    Signed {
        headers: Vec::new(),
        body: Vec::new().into(),
    }
}

fn json(header: &str, signature: String, body: &str) -> Signed {
    Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            (header.into(), signature),
        ],
        body: body.to_owned().into(),
    }
}

#[tokio::test]
async fn trello_head_and_nylas_challenge_are_answered_and_not_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    // Trello signs the callback URL it was given; the test gives it this one.
    let trello_url = "https://hooks.example.com/hooks/trello";
    let server = Server::start(dir.path(), &config(&db, &extra(trello_url)));
    let client = client();

    // Trello: HEAD when the webhook is created → 200, empty.
    let head = send(&client, "HEAD", &server.url("/hooks/trello"), &bodiless())
        .await
        .unwrap();
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    // Nylas: GET ?challenge= → 200 with exactly the challenge, as text, nosniff.
    let challenge = "bc609b38-c81f-47fb-a275-1d9bd61a968b";
    let url = server.url(&format!("/hooks/nylas?challenge={challenge}"));
    let get = send(&client, "GET", &url, &bodiless()).await.unwrap();
    assert_eq!(get.status, 200);
    assert_eq!(get.body, challenge.as_bytes());
    assert_eq!(
        get.headers["content-type"].to_str().unwrap(),
        "text/plain; charset=utf-8"
    );
    assert_eq!(get.headers["x-content-type-options"], "nosniff");
    assert!(inbox_rows(&db).is_empty(), "a probe is not an event");

    // Anything else that is not a POST is still a wrong method: markup in a
    // challenge, a probe the provider does not send, another provider's
    // endpoint, an unknown endpoint.
    for (method, path) in [
        ("GET", "/hooks/nylas?challenge=%3Cscript%3E".to_owned()),
        ("GET", "/hooks/nylas".to_owned()),
        ("GET", "/hooks/trello".to_owned()),
        ("HEAD", "/hooks/nylas".to_owned()),
        ("GET", format!("/hooks/unknown?challenge={challenge}")),
        ("PUT", "/hooks/trello".to_owned()),
    ] {
        let answer = send(&client, method, &server.url(&path), &bodiless())
            .await
            .unwrap();
        assert_eq!(answer.status, 405, "{method} {path}");
    }

    // The signed deliveries that follow are events like any other.
    let trello_body = r#"{"action":{"id":"act-1","type":"updateCard","date":"2026-01-01T00:00:00.000Z"},"model":{"id":"board-1"}}"#;
    let signature = hookinbox_verify::providers::trello::sign(
        TRELLO_SECRET,
        trello_url,
        trello_body.as_bytes(),
    );
    let signed = json("x-trello-webhook", signature, trello_body);
    let answer = post(&client, &server.url("/hooks/trello"), &signed).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.json()["accepted"], true);

    let nylas_body = r#"{"specversion":"1.0","type":"message.created","id":"ntf-1","time":1767225600,"data":{"object":{"id":"msg-1"}}}"#;
    let signature = hookinbox_verify::providers::nylas::sign(NYLAS_SECRET, nylas_body.as_bytes());
    let forged = json(
        "x-nylas-signature",
        hookinbox_verify::providers::nylas::sign("not-the-secret", nylas_body.as_bytes()),
        nylas_body,
    );
    let answer = post(&client, &server.url("/hooks/nylas"), &forged).await;
    assert_eq!((answer.status, answer.error()), (401, "signature".into()));
    let answer = post(
        &client,
        &server.url("/hooks/nylas"),
        &json("x-nylas-signature", signature, nylas_body),
    )
    .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(inbox_rows(&db).len(), 2);
}
