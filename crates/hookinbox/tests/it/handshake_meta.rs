//! Meta's URL verification through the real binary: the unsigned
//! `hub.challenge` GET is answered with the challenge when it presents the
//! endpoint's `verify_token`, refused otherwise, never stored; signed
//! notifications on the same URL are events. GETs to endpoints of providers
//! without such a check stay 405.

use crate::support;

use support::*;

const APP_SECRET: &str = "meta-test-app-secret";
const VERIFY_TOKEN: &str = "meatyhamhock";

async fn get(client: &HttpClient, url: &str) -> Answer {
    let empty = Signed {
        headers: Vec::new(),
        body: Default::default(),
    };
    send(client, "GET", url, &empty)
        .await
        .expect("GET answered")
}

fn notification(body: &str, app_secret: &str) -> Signed {
    Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            (
                "x-hub-signature-256".into(),
                hookinbox_verify::providers::meta::sign(app_secret, body.as_bytes()),
            ),
        ],
        body: body.to_owned().into(),
    }
}

#[tokio::test]
async fn meta_hub_challenge_is_answered_and_notifications_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let extra = format!(
        r#"
[[endpoint]]
id = "meta"
provider = "meta"
verify_token = "{VERIFY_TOKEN}"
[[endpoint.secret]]
version = "1"
value = "{APP_SECRET}"

[[endpoint]]
id = "stripe"
provider = "stripe"
[[endpoint.secret]]
version = "1"
value = "whsec_test_secret"
"#
    );
    let server = Server::start(dir.path(), &config(&db, &extra));
    let client = client();
    let url = server.url("/hooks/meta");

    let answer = get(
        &client,
        &format!(
            "{url}?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token={VERIFY_TOKEN}"
        ),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert_eq!(&answer.body[..], b"1158201444");
    assert!(answer.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));

    let wrong = get(
        &client,
        &format!("{url}?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=guess"),
    )
    .await;
    assert_eq!((wrong.status, wrong.error()), (401, "signature".into()));
    let bare = get(&client, &url).await;
    assert_eq!(
        (bare.status, bare.error()),
        (401, "missing_signature".into())
    );
    assert!(
        inbox_rows(&db).is_empty(),
        "a verification request is not an event"
    );

    // Other providers' endpoints still take POST only.
    let elsewhere = get(
        &client,
        &format!(
            "{}?hub.mode=subscribe&hub.challenge=1&hub.verify_token={VERIFY_TOKEN}",
            server.url("/hooks/stripe")
        ),
    )
    .await;
    assert_eq!(elsewhere.status, 405);

    let body = r#"{"object":"page","entry":[{"id":"1","time":1700000000,"messaging":[{"sender":{"id":"2"},"message":{"mid":"m1","text":"hi"}}]}]}"#;
    let forged = post(&client, &url, &notification(body, VERIFY_TOKEN)).await;
    assert_eq!((forged.status, forged.error()), (401, "signature".into()));
    let accepted = post(&client, &url, &notification(body, APP_SECRET)).await;
    assert_eq!(accepted.status, 200);
    assert_eq!(accepted.json()["accepted"], true);
    let again = post(&client, &url, &notification(body, APP_SECRET)).await;
    assert_eq!(again.json()["duplicate"], true, "a retry is the same event");
    assert_eq!(inbox_rows(&db).len(), 1);
}
