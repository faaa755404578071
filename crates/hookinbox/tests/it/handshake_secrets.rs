//! Secrets a provider hands over in its handshake, through the real binary
//! (issue #23): Asana's `X-Hook-Secret` echoed and kept, Notion's
//! verification token kept and readable by the operator only
//! (`hookinbox endpoints handshake --reveal`); both taken only at the URL
//! with the endpoint's handshake token, sealed at rest, never in the log;
//! events signed with them accepted, others refused 401 with nothing stored.

use std::path::Path;
use std::process::Command;

use crate::support;

use support::*;

const ASANA_TOKEN: &str = "asana-handshake-token-4f2e";
const NOTION_TOKEN: &str = "notion-handshake-token-9b1c";
const ASANA_SECRET: &str = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81";
const ASANA_SECOND: &str = "0d1c2b3a49586776a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f00f1e";
const NOTION_SECRET: &str = "secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl";

fn extra() -> String {
    format!(
        r#"
[[endpoint]]
id = "asana"
provider = "asana"
verify_token = "{ASANA_TOKEN}"

[[endpoint]]
id = "notion"
provider = "notion"
verify_token = "{NOTION_TOKEN}"
"#
    )
}

/// The two endpoints, with a key ring: a handed-over secret is kept sealed.
fn sealed_config(db: &Path) -> String {
    TestConfig::new(db).encrypted().extra(&extra()).to_string()
}

fn request(headers: &[(&str, &str)], body: &str) -> Signed {
    Signed {
        headers: headers
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect(),
        body: body.to_owned().into(),
    }
}

fn json(headers: &[(&str, &str)], body: &str) -> Signed {
    let mut headers = headers.to_vec();
    headers.push(("content-type", "application/json"));
    request(&headers, body)
}

fn signed_json(header: &str, signature: String, body: &str) -> Signed {
    json(&[(header, signature.as_str())], body)
}

fn learned_rows(db: &Path) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT count(*) FROM learned_secret", [], |row| row.get(0))
        .unwrap()
}

/// Every byte the service wrote to disk beside its log: the database, its
/// WAL and the payload log.
fn stored_bytes(dir: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        for entry in std::fs::read_dir(&path).unwrap().flatten() {
            let path = entry.path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                pending.push(path);
            } else if name.starts_with("inbox.db") {
                bytes.extend(std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

fn asana_event(gid: &str) -> String {
    format!(
        r#"{{"events":[{{"user":{{"gid":"1516","resource_type":"user"}},"created_at":"2026-01-01T00:00:00.123Z","action":"changed","resource":{{"gid":"{gid}","resource_type":"task"}},"parent":null,"change":{{"field":"completed","action":"changed"}}}}]}}"#
    )
}

#[tokio::test]
async fn asana_hook_secret_is_echoed_kept_and_verifies_events() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &sealed_config(&db));
    let client = client();
    let url = server.url("/hooks/asana");
    let handshake_url = server.url(&format!("/hooks/asana?handshake={ASANA_TOKEN}"));
    let sign = hookinbox_verify::providers::asana::sign;

    // Before any handshake nothing verifies: the service's state, a 503.
    let body = asana_event("1202");
    let early = post(
        &client,
        &url,
        &signed_json(
            "x-hook-signature",
            sign(ASANA_SECRET, body.as_bytes()),
            &body,
        ),
    )
    .await;
    assert_eq!((early.status, early.error()), (503, "unavailable".into()));

    // A handover anywhere but at the handshake URL is refused, nothing kept.
    let secret = [("x-hook-secret", ASANA_SECRET)];
    let unguarded = post(&client, &url, &request(&secret, "")).await;
    assert_eq!(
        (unguarded.status, unguarded.error()),
        (401, "missing_signature".into())
    );
    let guessed = server.url("/hooks/asana?handshake=a-guess");
    let guessed = post(&client, &guessed, &request(&secret, "")).await;
    assert_eq!((guessed.status, guessed.error()), (401, "signature".into()));
    assert_eq!(learned_rows(&db), 0);

    // At the handshake URL: 200 with the secret echoed, and kept.
    let answer = post(&client, &handshake_url, &request(&secret, "")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.headers["x-hook-secret"], ASANA_SECRET);
    assert_eq!(learned_rows(&db), 1);
    assert!(inbox_rows(&db).is_empty(), "a handshake is not an event");

    // Events signed with it are accepted; others are refused, not stored.
    let forged = post(
        &client,
        &url,
        &signed_json(
            "x-hook-signature",
            sign(ASANA_SECOND, body.as_bytes()),
            &body,
        ),
    )
    .await;
    assert_eq!((forged.status, forged.error()), (401, "signature".into()));
    assert!(inbox_rows(&db).is_empty());
    let signed = signed_json(
        "x-hook-signature",
        sign(ASANA_SECRET, body.as_bytes()),
        &body,
    );
    let accepted = post(&client, &url, &signed).await;
    assert_eq!(accepted.status, 200, "{:?}", accepted.body);
    assert_eq!(accepted.json()["duplicate"], false);
    assert_eq!(post(&client, &url, &signed).await.json()["duplicate"], true);

    // A second webhook to the same URL hands over its own secret; both verify.
    let second = [("x-hook-secret", ASANA_SECOND)];
    let answer = post(&client, &handshake_url, &request(&second, "")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(learned_rows(&db), 2);
    let other = asana_event("1203");
    let answer = post(
        &client,
        &url,
        &signed_json(
            "x-hook-signature",
            sign(ASANA_SECOND, other.as_bytes()),
            &other,
        ),
    )
    .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let rows = inbox_rows(&db);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].2, "2026-01-01T00:00:00.123Z:1202:changed:completed");

    // Asana's heartbeat (no events) is answered and not stored.
    let heartbeat = r#"{"events":[]}"#;
    let answer = post(
        &client,
        &url,
        &signed_json(
            "x-hook-signature",
            sign(ASANA_SECRET, heartbeat.as_bytes()),
            heartbeat,
        ),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert_eq!(inbox_rows(&db).len(), 2);

    let logs = server.logs();
    for secret in [ASANA_SECRET, ASANA_SECOND, ASANA_TOKEN] {
        assert!(!logs.contains(secret), "{secret:?} in the log:\n{logs}");
    }
    assert!(
        logs.contains("learned-1") && logs.contains("learned-2"),
        "{logs}"
    );
    drop(server);
    let stored = stored_bytes(dir.path());
    assert!(!stored.is_empty());
    for secret in [ASANA_SECRET, ASANA_SECOND] {
        assert!(!contains(&stored, secret), "{secret} stored in clear");
    }
}

fn handshake_command(config: &Path, reveal: bool) -> (bool, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookinbox"));
    command
        .args(["endpoints", "handshake", "notion", "--config"])
        .arg(config);
    if reveal {
        command.arg("--reveal");
    }
    let out = command.output().expect("run hookinbox");
    assert!(
        out.status.code().is_some_and(|code| code <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains(NOTION_SECRET),
        "the token on stderr"
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test]
async fn notion_verification_token_is_read_by_the_operator_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &sealed_config(&db));
    let client = client();
    let body = format!(r#"{{"verification_token":"{NOTION_SECRET}"}}"#);

    let (found, out) = handshake_command(&server.config_path, false);
    assert!(!found, "{out}");
    assert!(out.contains("no secret handed over yet"), "{out}");

    // Not at the handshake URL: refused, nothing kept.
    let refused = post(&client, &server.url("/hooks/notion"), &json(&[], &body)).await;
    assert_eq!(
        (refused.status, refused.error()),
        (401, "missing_signature".into())
    );
    assert_eq!(learned_rows(&db), 0);

    let url = server.url(&format!("/hooks/notion?handshake={NOTION_TOKEN}"));
    let answer = post(&client, &url, &json(&[], &body)).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert!(!contains(&answer.body, NOTION_SECRET), "the token echoed");
    assert!(inbox_rows(&db).is_empty(), "a handshake is not an event");

    // The operator reads it: the fingerprint by default, the token on --reveal.
    let (found, out) = handshake_command(&server.config_path, false);
    assert!(found);
    assert!(out.starts_with("learned-1  "), "{out}");
    assert!(out.contains("sha256:"), "{out}");
    assert!(!out.contains(NOTION_SECRET), "{out}");
    let (_, revealed) = handshake_command(&server.config_path, true);
    assert!(revealed.trim_end().ends_with(NOTION_SECRET), "{revealed}");

    // Events signed with the token are accepted; a wrong one is refused.
    let event = r#"{"id":"367cba44-b6f3-4c92-81e7-6a2e9659efd4","timestamp":"2026-01-01T00:00:00.285Z","type":"page.created","entity":{"id":"153104cd-477e-809d-8dc4-ff2d96ae3090","type":"page"},"data":{}}"#;
    let sign = hookinbox_verify::providers::notion::sign;
    let events = server.url("/hooks/notion");
    let forged = post(
        &client,
        &events,
        &signed_json(
            "x-notion-signature",
            sign("secret_not-it", event.as_bytes()),
            event,
        ),
    )
    .await;
    assert_eq!((forged.status, forged.error()), (401, "signature".into()));
    let accepted = post(
        &client,
        &events,
        &signed_json(
            "x-notion-signature",
            sign(NOTION_SECRET, event.as_bytes()),
            event,
        ),
    )
    .await;
    assert_eq!(accepted.status, 200, "{:?}", accepted.body);
    let rows = inbox_rows(&db);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].2, "367cba44-b6f3-4c92-81e7-6a2e9659efd4");

    let logs = server.logs();
    for secret in [NOTION_SECRET, NOTION_TOKEN] {
        assert!(!logs.contains(secret), "{secret:?} in the log:\n{logs}");
    }
    drop(server);
    assert!(!contains(&stored_bytes(dir.path()), NOTION_SECRET));
}
