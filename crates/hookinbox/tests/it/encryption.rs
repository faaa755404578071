//! Bodies and audit headers at rest (docs/architecture.md §6), through the real
//! binary: a marker sent in a body and a header is in no file under the
//! data directory, yet `events show --payload` returns the body; start-up
//! without a key is refused; on PostgreSQL the marker is in no `pg_dump`
//! of the schema (and is, as a control, when the same run is made in
//! plaintext); the development config makes its key file on
//! first start and reuses it; a rotation through the config and
//! `keys rewrap` keeps every event readable.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine;
use support::*;

fn hookinbox(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .output()
        .expect("run hookinbox")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// `events show ID --payload` with `config`: its stdout, after asserting
/// it succeeded.
fn shown_payload(config: &Path, id: &str) -> String {
    let out = hookinbox(&[
        "events",
        "show",
        id,
        "--payload",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn key_table(id: &str, key: [u8; 32]) -> String {
    let value = base64::engine::general_purpose::STANDARD.encode(key);
    format!("[[encryption.key]]\nid = \"{id}\"\nvalue = \"{value}\"\n")
}

#[tokio::test]
async fn a_marker_in_bodies_and_headers_is_in_no_file_of_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let db = data.join("inbox.db");
    let mut server = Server::start(dir.path(), &TestConfig::new(&db).encrypted().to_string());
    let marker = "MARKER-7f3a9c1e-not-on-disk";
    let client = client();
    let mut ids = Vec::new();
    for n in 0..5 {
        let body = format!(r#"{{"id":"m-{n}","type":"payment.succeeded","note":"{marker}"}}"#);
        let event = lab_signed(body, now()).with("x-audit-marker", marker);
        let answer = post(&client, &server.url("/hooks/lab"), &event).await;
        assert_eq!(answer.status, 200, "{}", text(&answer.body));
        ids.push(answer.json()["id"].as_str().unwrap().to_owned());
    }
    server.kill9();

    let files = files_under(&data);
    assert!(
        files
            .iter()
            .any(|f| f.extension().is_some_and(|e| e == "seg")),
        "{files:?}"
    );
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        assert!(
            !bytes
                .windows(marker.len())
                .any(|window| window == marker.as_bytes()),
            "the marker is in {} in plaintext",
            file.display()
        );
    }
    let shown = shown_payload(&server.config_path, &ids[3]);
    assert!(
        shown.contains(&format!(
            r#""id":"m-3","type":"payment.succeeded","note":"{marker}""#
        )),
        "{shown}"
    );
}

/// Whether `needle` is in `haystack` as it is, or as the lowercase hex a
/// plain `pg_dump` writes a `bytea` value in.
fn dump_holds(haystack: &[u8], needle: &str) -> bool {
    let contains = |needle: &[u8]| haystack.windows(needle.len()).any(|w| w == needle);
    let hex: String = needle.bytes().map(|b| format!("{b:02x}")).collect();
    contains(needle.as_bytes()) || contains(hex.as_bytes())
}

/// The marker test on PostgreSQL: events with a marker in the body and
/// in two kept headers (`User-Agent`, which the audit allowlist keeps, and
/// a custom one, which it drops), then a `pg_dump` of the schema (every
/// table, the data as `COPY`). With a key the markers are nowhere in it;
/// the same run without a key (`allow_plaintext`) shows the scan finds
/// both, in the clear and as hex.
#[tokio::test]
async fn a_marker_in_bodies_and_headers_is_in_no_pg_dump_of_the_schema() {
    let body_marker = "PGDUMP-BODY-3e1f-not-at-rest";
    let header_marker = "PGDUMP-HEADER-9a0c-not-at-rest";
    for encrypted in [true, false] {
        let schema = support::postgres::PgSchema::new();
        let dir = tempfile::tempdir().unwrap();
        let unused = dir.path().join("unused.db");
        let config = TestConfig::new(&unused);
        let config = if encrypted {
            config.encrypted()
        } else {
            config
        };
        let mut server = Server::start(dir.path(), &schema.config(config).to_string());
        let client = client();
        for n in 0..5 {
            let body =
                format!(r#"{{"id":"dump-{n}","type":"payment.succeeded","note":"{body_marker}"}}"#);
            let event = lab_signed(body, now())
                .with("user-agent", &format!("Provider/1.0 {header_marker}"))
                .with("x-audit-marker", header_marker);
            let answer = post(&client, &server.url("/hooks/lab"), &event).await;
            assert_eq!(answer.status, 200, "{}", text(&answer.body));
        }
        server.kill9();

        let dump = Command::new("pg_dump")
            .arg(format!("--dbname={}", support::postgres::postgres_url()))
            .arg(format!("--schema={}", schema.name))
            .output()
            .expect("run pg_dump (postgresql-client; .ci/services installs it)");
        assert!(dump.status.success(), "pg_dump: {}", text(&dump.stderr));
        let events = "COPY ".to_owned() + &schema.name + ".inbox ";
        assert!(
            text(&dump.stdout).contains(&events),
            "the dump has no inbox table data"
        );
        for marker in [body_marker, header_marker] {
            assert_eq!(
                dump_holds(&dump.stdout, marker),
                !encrypted,
                "{marker} in a pg_dump of a {} store",
                if encrypted { "sealed" } else { "plaintext" }
            );
        }
    }
}

#[test]
fn start_up_without_a_key_is_refused_naming_encryption() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookinbox.toml");
    let db = dir.path().join("inbox.db");
    std::fs::write(&config, TestConfig::new(&db).encryption("").to_string()).unwrap();
    let (code, stderr) = serve_refused(&config, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].starts_with("error: encryption: "), "{stderr}");
    assert!(errors[0].contains("allow_plaintext"), "{stderr}");
    assert!(!db.exists(), "nothing is stored before the refusal");
}

#[tokio::test]
async fn the_development_config_creates_its_key_file_once_and_reuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let example = std::fs::read_to_string(repository.join("hookinbox.example.toml")).unwrap();
    // Port 0 for the admin listener, so parallel runs cannot collide.
    let example = example.replace(r#"listen = "127.0.0.1:9090""#, r#"listen = "127.0.0.1:0""#);
    let config = dir.path().join("hookinbox.example.toml");
    std::fs::write(&config, example).unwrap();
    let key_file = dir.path().join("hookinbox.key");
    assert!(!key_file.exists());

    let mut server = Server::start_with(dir.path(), &config);
    let key = std::fs::read_to_string(&key_file).unwrap();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(key.trim_end())
        .unwrap();
    assert_eq!(decoded.len(), 32);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let body = r#"{"id":"dev-1","type":"payment.succeeded"}"#;
    let timestamp = now();
    let signature =
        hookinbox_verify::providers::lab::sign("lab-dev-secret-0001", timestamp, body.as_bytes());
    let event = Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-timestamp".into(), timestamp.to_string()),
            ("x-signature".into(), signature),
        ],
        body: body.as_bytes().to_vec().into(),
    };
    let answer = post(&client(), &server.url("/hooks/lab"), &event).await;
    assert_eq!(answer.status, 200, "{}", text(&answer.body));
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    server.kill9();

    // The second start reads the same file; the event sealed under it opens.
    let _server = Server::start_with(dir.path(), &config);
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), key);
    assert!(shown_payload(&config, &id).contains(body));
    assert_eq!(
        _server
            .logs()
            .matches("Created a new encryption key file")
            .count(),
        1,
        "{}",
        _server.logs()
    );
}

#[tokio::test]
async fn a_rotation_through_the_config_and_keys_rewrap_keeps_events_readable() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let (k1, k2) = (key_table("k1", [1; 32]), key_table("k2", [2; 32]));
    let client = client();
    let mut ids = Vec::new();

    let mut server = Server::start(
        dir.path(),
        &TestConfig::new(&db).encryption(&k1).to_string(),
    );
    for name in ["r-1", "r-2"] {
        let answer = post(&client, &server.url("/hooks/lab"), &lab_event(name)).await;
        assert_eq!(answer.status, 200);
        ids.push(answer.json()["id"].as_str().unwrap().to_owned());
    }
    server.kill9();

    // k2 active, k1 kept: old events open, new ones are sealed under k2.
    let both = format!("[encryption]\nactive = \"k2\"\n{k1}{k2}");
    let server = Server::start(
        dir.path(),
        &TestConfig::new(&db).encryption(&both).to_string(),
    );
    let answer = post(&client, &server.url("/hooks/lab"), &lab_event("r-3")).await;
    assert_eq!(answer.status, 200);
    ids.push(answer.json()["id"].as_str().unwrap().to_owned());
    assert!(shown_payload(&server.config_path, &ids[0]).contains(r#""id":"r-1""#));

    // While it runs: reseal what k1 sealed.
    let config = server.config_path.to_str().unwrap().to_owned();
    let out = hookinbox(&["keys", "rewrap", "--config", &config, "--batch", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.lines().any(|l| l == "rewrapped 2 records to key k2"),
        "{stderr}"
    );
    let again = hookinbox(&["keys", "rewrap", "--config", &config]);
    assert!(
        text(&again.stderr)
            .lines()
            .any(|l| l == "rewrapped 0 records to key k2"),
        "{}",
        text(&again.stderr)
    );
    drop(server);

    // k1 removed: every event still opens.
    let config = dir.path().join("hookinbox.toml");
    std::fs::write(&config, TestConfig::new(&db).encryption(&k2).to_string()).unwrap();
    for (id, name) in ids.iter().zip(["r-1", "r-2", "r-3"]) {
        assert!(
            shown_payload(&config, id).contains(&format!(r#""id":"{name}""#)),
            "{id}"
        );
    }
}
