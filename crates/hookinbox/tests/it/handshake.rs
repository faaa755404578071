//! Provider handshakes through the real binary: answered synchronously after
//! verification, never stored; an unverified handshake is refused.

use crate::support;

use support::*;

const SLACK_SECRET: &str = "slack-test-signing-secret";

fn slack_request(body: &str, secret: &str) -> Signed {
    let ts = now();
    Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-slack-request-timestamp".into(), ts.to_string()),
            (
                "x-slack-signature".into(),
                hookinbox_verify::providers::slack::sign(secret, ts, body.as_bytes()),
            ),
        ],
        body: body.to_owned().into(),
    }
}

#[tokio::test]
async fn slack_url_verification_is_answered_and_not_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let extra = format!(
        r#"
[[endpoint]]
id = "slack"
provider = "slack"
[[endpoint.secret]]
version = "1"
value = "{SLACK_SECRET}"
"#
    );
    let server = Server::start(dir.path(), &config(&db, &extra));
    let client = client();
    let url = server.url("/hooks/slack");
    let challenge = r#"{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;

    let answer = post(&client, &url, &slack_request(challenge, SLACK_SECRET)).await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.json()["challenge"],
        "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    );
    let forged = post(&client, &url, &slack_request(challenge, "not-the-secret")).await;
    assert_eq!((forged.status, forged.error()), (401, "signature".into()));
    assert!(inbox_rows(&db).is_empty(), "a handshake is not an event");

    let event = r#"{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}"#;
    let answer = post(&client, &url, &slack_request(event, SLACK_SECRET)).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json()["accepted"], true);
    assert_eq!(inbox_rows(&db).len(), 1);
}
