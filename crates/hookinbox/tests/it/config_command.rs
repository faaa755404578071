//! `hookinbox config example` and `hookinbox config check` as an operator
//! runs them, the start-up line per endpoint, and how a configuration that
//! cannot be read is reported.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

use support::*;

fn hookinbox(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run hookinbox")
}

fn check(config: &Path, json: bool, env: &[(&str, &str)]) -> Output {
    let mut args = vec!["config", "check", "--config", config.to_str().unwrap()];
    if json {
        args.push("--json");
    }
    hookinbox(&args, env)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_printed_example_passes_config_check() {
    let dir = tempfile::tempdir().unwrap();
    let example = hookinbox(&["config", "example"], &[]);
    assert!(example.status.success(), "{}", text(&example.stderr));
    let config = dir.path().join("hookinbox.toml");
    std::fs::write(&config, &example.stdout).unwrap();
    // Its secrets come from the environment, as the example recommends.
    let env = [
        ("STRIPE_WEBHOOK_SECRET", "whsec_c3RyaXBlLWRldg=="),
        ("BILLING_WEBHOOK_SECRET", TARGET_SECRET),
        ("HOOKINBOX_ENCRYPTION_KEY", ENCRYPTION_KEY),
    ];
    let out = check(&config, false, &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("is valid"), "{stdout}");
    assert!(stdout.contains("lease = \"30s\""), "{stdout}");
    // Without them, check refuses it as serve would, naming the field.
    let out = check(&config, false, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("endpoint[0].secret[0].value_env: environment variable `STRIPE_WEBHOOK_SECRET` is not set"),
        "{}",
        text(&out.stderr)
    );
}

/// Every kind of secret, inline where a careless file would put it: the
/// output names sources, never values.
#[test]
fn config_check_prints_sources_never_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = [
        "lab-inline-secret-0001",
        "lab-env-secret-0002",
        "basic-password-0003",
        "admin-token-0004-abcdefgh",
        TARGET_SECRET,
    ];
    let config = dir.path().join("hookinbox.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[encryption]
allow_plaintext = true

[admin]
listen = "127.0.0.1:0"
token = "{admin}"

[[endpoint]]
id = "lab"
provider = "lab"
basic_auth = {{ username = "lab", password = "{password}" }}

[[endpoint.secret]]
version = "v2"
value = "{inline}"

[[endpoint.secret]]
version = "v1"
value_env = "HOOKINBOX_TEST_LAB_SECRET"

[[endpoint.target]]
name = "sink"
kind = "http"
url = "http://127.0.0.1:9/x"
secret = "{target}"
"#,
            inline = secrets[0],
            password = secrets[2],
            admin = secrets[3],
            target = secrets[4],
        ),
    )
    .unwrap();
    let env = [("HOOKINBOX_TEST_LAB_SECRET", secrets[1])];
    for json in [false, true] {
        let out = check(&config, json, &env);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let printed = format!("{}{}", text(&out.stdout), text(&out.stderr));
        for secret in secrets {
            assert!(!printed.contains(secret), "{secret} printed:\n{printed}");
        }
        assert!(printed.contains("HOOKINBOX_TEST_LAB_SECRET"), "{printed}");
        // The file's shape names a placeholder variable; the settings' JSON
        // says the value is redacted.
        let redacted = if json {
            "[redacted]"
        } else {
            "value_env = \"HOOKINBOX_REDACTED_ENDPOINT_0_SECRET_0_VALUE\""
        };
        assert!(printed.contains(redacted), "{printed}");
    }

    // What check prints is itself a file check accepts: with the
    // placeholders set to the inline values it stood for, the same
    // settings, printed the same way.
    let out = check(&config, false, &env);
    let printed = dir.path().join("printed").join("hookinbox.toml");
    std::fs::create_dir(printed.parent().unwrap()).unwrap();
    std::fs::write(&printed, &out.stdout).unwrap();
    let placeholders = [
        ("HOOKINBOX_REDACTED_ADMIN_TOKEN", secrets[3]),
        (
            "HOOKINBOX_REDACTED_ENDPOINT_0_BASIC_AUTH_PASSWORD",
            secrets[2],
        ),
        ("HOOKINBOX_REDACTED_ENDPOINT_0_SECRET_0_VALUE", secrets[0]),
        ("HOOKINBOX_REDACTED_ENDPOINT_0_TARGET_0_SECRET", secrets[4]),
    ];
    for (name, _) in placeholders {
        assert!(
            text(&out.stdout).contains(&format!("#   {name}\n")),
            "listed: {name}"
        );
    }
    let without = check(&printed, false, &env);
    assert_eq!(without.status.code(), Some(2), "a placeholder must be set");
    let env_and_placeholders: Vec<(&str, &str)> = env.iter().copied().chain(placeholders).collect();
    let again = check(&printed, false, &env_and_placeholders);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    let body = |bytes: &[u8]| text(bytes).split_once("\n\n").unwrap().1.to_owned();
    assert_eq!(body(&again.stdout), body(&out.stdout));
    let json = |config: &Path, env: &[(&str, &str)]| -> serde_json::Value {
        serde_json::from_slice(&check(config, true, env).stdout).unwrap()
    };
    assert_eq!(
        json(&printed, &env_and_placeholders)["delivery"],
        json(&config, &env)["delivery"]
    );
    let out = check(&config, true, &env);
    let settings: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let endpoint = &settings["endpoint"][0];
    assert_eq!(
        endpoint["secret"][1]["value"],
        serde_json::json!({"env": "HOOKINBOX_TEST_LAB_SECRET"})
    );
    assert_eq!(endpoint["target"][0]["timeout"], "5s");
    assert_eq!(settings["delivery"]["lease"], "30s");
}

#[test]
fn config_check_refuses_what_serve_refuses_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let path = dir.path().join("bad.toml");
    let cases = [
        (
            config_with_target(&db, "http://127.0.0.1:9/x", "", "")
                .replace("timeout = \"2s\"", "timeout = \"0s\""),
            "error: endpoint[0].target[0].timeout: must be longer than zero",
        ),
        (
            TestConfig::new(&db)
                .storage("busy_timeout_ms = 300")
                .to_string(),
            "`busy_timeout_ms` is now `busy_timeout`, a duration such as \"2s\"",
        ),
        (
            config_with_target(&db, "http://127.0.0.1:9/x", "", "")
                .replace(TARGET_SECRET, "not-a-whsec"),
            "error: endpoint[0].target[0].secret: expected a whsec_ secret",
        ),
        (
            config_with_target(&db, "http://127.0.0.1:9/x", "filter = 'event.type > 5'", ""),
            "error: endpoint[0].target[0].filter: target `sink`: at 1:12: compares string with int",
        ),
        (
            config_with_target(
                &db,
                "http://127.0.0.1:9/x",
                "filter = '''\nevent.type == \"thing.done\" &&\n  body.amount > \"1000\"'''",
                "",
            ),
            "error: endpoint[0].target[0].filter: target `sink`: at 2:15: compares int with string \
             (over the lab sample event `thing.done`)",
        ),
    ];
    for (text_of_config, expected) in cases {
        std::fs::write(&path, text_of_config).unwrap();
        let out = check(&path, false, &[]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(expected),
            "expected {expected:?} in {stderr}"
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_missing_config_file_is_reported_with_its_cause_once() {
    for command in [&["config", "check"][..], &["serve"][..]] {
        let mut args = command.to_vec();
        args.extend(["--config", "nope.toml"]);
        let out = hookinbox(&args, &[]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = text(&out.stderr);
        assert!(stderr.contains("cannot read nope.toml: "), "{stderr}");
        assert_eq!(
            stderr.matches("No such file or directory").count(),
            1,
            "{stderr}"
        );
    }
}

#[test]
fn serve_logs_each_endpoint_with_its_versions_and_targets() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(
        dir.path(),
        &config_with_target(&db, "http://127.0.0.1:9/x", "", ""),
    );
    let logs = server.logs();
    let line = logs
        .lines()
        .find(|line| line.contains("Endpoint ready."))
        .unwrap_or_else(|| panic!("no endpoint line in:\n{logs}"));
    for part in [
        "path=/hooks/lab",
        "provider=lab",
        "secret_versions=v1",
        "targets=sink (http)",
    ] {
        assert!(line.contains(part), "{part} missing from {line}");
    }
    assert!(!logs.contains(LAB_SECRET) && !logs.contains(TARGET_SECRET));
}

#[test]
fn config_check_notes_that_a_handler_target_needs_an_embedding_program() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookinbox.toml");
    let with_handler = format!(
        "{}\n[[endpoint.target]]\nname = \"ledger\"\nkind = \"handler\"\n",
        config(&dir.path().join("inbox.db"), "")
    );
    std::fs::write(&path, with_handler).unwrap();
    let out = check(&path, false, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("target `ledger` is a handler target"),
        "{stderr}"
    );
}

/// The TOML blocks of README.md and docs/ marked as complete files (an
/// HTML comment `<!-- a complete file … -->` right above the fence) pass
/// `config check` as written, given the variables they name: a newcomer
/// who pastes one gets a file that starts.
#[test]
fn the_docs_complete_files_pass_config_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "md") {
            pages.push(path);
        }
    }
    let env = [
        ("STRIPE_WEBHOOK_SECRET", "whsec_c3RyaXBlLWRldg=="),
        ("BILLING_WEBHOOK_SECRET", TARGET_SECRET),
        ("HOOKINBOX_ENCRYPTION_KEY", ENCRYPTION_KEY),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut checked = Vec::new();
    for page in &pages {
        let markdown = std::fs::read_to_string(page).unwrap();
        let mut lines = markdown.lines();
        while let Some(line) = lines.next() {
            if !line.starts_with("<!-- a complete file") {
                continue;
            }
            assert_eq!(
                lines.next(),
                Some("```toml"),
                "{}: a fence under the marker",
                page.display()
            );
            let block: Vec<&str> = lines.by_ref().take_while(|line| *line != "```").collect();
            let config = dir.path().join(format!("doc-{}.toml", checked.len()));
            std::fs::write(&config, block.join("\n")).unwrap();
            let out = check(&config, false, &env);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}: a complete file that config check refuses: {}",
                page.display(),
                text(&out.stderr)
            );
            checked.push(page.display().to_string());
        }
    }
    assert!(
        checked
            .iter()
            .any(|page| page.ends_with("configuration.md")),
        "docs/configuration.md's short file is marked: {checked:?}"
    );
}
