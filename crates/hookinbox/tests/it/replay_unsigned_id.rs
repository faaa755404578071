//! GitHub signs the body but not its `X-GitHub-Delivery` id: a signed
//! request re-posted under a new delivery id must stay one event — one row,
//! one delivery — and what came from unsigned headers is marked on the row
//! and on the delivery.

use crate::support;

use std::time::Duration;

use support::*;

const GITHUB_SECRET: &str = "github-test-secret";

/// A GitHub endpoint delivering to the `sink` target at `url`.
fn github_endpoint(url: &str) -> String {
    format!(
        r#"
[[endpoint]]
id = "github"
provider = "github"

[[endpoint.secret]]
version = "v1"
value = "{GITHUB_SECRET}"

[[endpoint.target]]
name = "sink"
kind = "http"
url = "{url}"
secret = "{TARGET_SECRET}"
"#
    )
}

#[tokio::test]
async fn a_signed_request_resent_under_a_new_delivery_id_is_a_duplicate() {
    let sink = Sink::start().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let config = config_with_target(&db, &sink.url(), "", &github_endpoint(&sink.url()));
    let server = Server::start(dir.path(), &config);
    let client = client();
    let url = server.url("/hooks/github");
    let body = r#"{"action":"opened","issue":{"number":1}}"#;

    let first = post(
        &client,
        &url,
        &github_signed(GITHUB_SECRET, body, "guid-original"),
    )
    .await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert_eq!(first.json()["duplicate"], false);
    let id = first.json()["id"].as_str().unwrap().to_owned();

    let copy = post(
        &client,
        &url,
        &github_signed(GITHUB_SECRET, body, "guid-forged"),
    )
    .await;
    assert_eq!(copy.status, 200, "{:?}", copy.body);
    assert_eq!(
        copy.json(),
        serde_json::json!({"accepted": true, "duplicate": true, "id": id})
    );

    // One row, under the original delivery id; it says which metadata no
    // signature covered.
    let rows = inbox_rows(&db);
    assert_eq!(
        rows,
        vec![(id.clone(), "github".to_owned(), "guid-original".to_owned())]
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let marker: Option<String> = conn
        .query_row(
            "SELECT unsigned_metadata FROM inbox WHERE id = ?1",
            [&id],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(marker.as_deref(), Some("event_id,event_type"));
    // One delivery row: the copy added none, so no second delivery can happen.
    assert_eq!(deliveries(&db).len(), 1);

    assert!(
        eventually(Duration::from_secs(10), || sink.accepted().len() == 1).await,
        "the event was not delivered"
    );
    let delivered = &sink.accepted()[0];
    assert_eq!(delivered.header("idempotency-key"), id);
    assert_eq!(delivered.header("x-hookinbox-event-id"), "guid-original");
    assert_eq!(
        delivered.header("x-hookinbox-unsigned"),
        "event-id, event-type"
    );
}

#[tokio::test]
async fn events_with_signed_ids_carry_no_unsigned_marker() {
    let sink = Sink::start().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &config_with_target(&db, &sink.url(), "", ""));
    let client = client();
    let url = server.url("/hooks/lab");
    // `lab` signs its ids: nothing to mark.
    for id in ["evt_a", "evt_b"] {
        let answer = post(&client, &url, &lab_event(id)).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.json()["duplicate"], false);
    }
    assert_eq!(inbox_rows(&db).len(), 2);
    assert!(
        eventually(Duration::from_secs(10), || sink.accepted().len() == 2).await,
        "the events were not delivered"
    );
    for delivered in sink.accepted() {
        assert!(
            delivered.headers.get("x-hookinbox-unsigned").is_none(),
            "{:?}",
            delivered.headers
        );
    }
}
