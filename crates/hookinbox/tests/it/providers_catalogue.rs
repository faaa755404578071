//! `hookinbox providers` as a user runs it, and docs/providers.md, which is
//! its `--markdown` output committed: the test fails when the two differ, so
//! a provider added or changed without regenerating the page is caught.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The command the page and this test tell a contributor to run.
const REGENERATE: &str = "cargo run -p hookinbox -- providers --markdown > docs/providers.md";

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn providers(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .arg("providers")
        .args(args)
        .output()
        .expect("run hookinbox providers");
    assert!(
        out.status.success(),
        "hookinbox providers {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the catalogue is UTF-8")
}

#[test]
fn docs_providers_md_is_the_generated_catalogue() {
    let generated = providers(&["--markdown"]);
    let path = repository_root().join("docs/providers.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; create it with `{REGENERATE}`",
            path.display()
        )
    });
    assert!(
        committed == generated,
        "docs/providers.md differs from `hookinbox providers --markdown`; regenerate it with `{REGENERATE}`"
    );
    assert!(
        committed.contains(REGENERATE),
        "the page names the command that regenerates it"
    );
}

#[test]
fn json_lists_every_provider_with_what_its_adapter_enforces() {
    let entries: Vec<serde_json::Value> =
        serde_json::from_str(&providers(&["--json"])).expect("--json prints a JSON array");
    let by_name = |name: &str| {
        entries
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not in the catalogue"))
    };
    let stripe = by_name("stripe");
    assert_eq!(stripe["tolerance_seconds"], 300);
    assert_eq!(stripe["redelivery_window_seconds"], 3 * 24 * 3600);
    assert_eq!(stripe["id_signed"], true);
    assert_eq!(stripe["vectors"]["kind"], "official_sdk");
    let github = by_name("github");
    assert_eq!(github["tolerance_seconds"], serde_json::Value::Null);
    assert_eq!(github["id_signed"], false);
    assert_eq!(by_name("mailgun")["requires_basic_auth"], true);
    assert!(by_name("slack")["handshake"].is_string());
    assert!(entries.len() >= 23, "{} providers", entries.len());
    for entry in &entries {
        let name = &entry["name"];
        for field in ["title", "docs_url", "scheme", "signed_parts", "id_source"] {
            assert!(
                entry[field].as_str().is_some_and(|v| !v.trim().is_empty()),
                "{name}: {field} is empty"
            );
        }
        // Scripts and in-repository documents named as sources exist.
        let mut paths = vec![entry["docs_url"].as_str().unwrap_or_default()];
        if entry["vectors"]["kind"] == "independent_python" {
            paths.push(entry["vectors"]["source"].as_str().unwrap_or_default());
        }
        for path in paths.into_iter().filter(|p| !p.starts_with("https://")) {
            assert!(
                repository_root().join(path).is_file(),
                "{name}: {path} does not exist"
            );
        }
    }
}

#[test]
fn text_names_each_provider_once_with_its_tolerance() {
    let text = providers(&[]);
    assert!(text.contains("stripe — Stripe"), "{text}");
    assert!(
        text.contains("tolerance   300 s (both directions)"),
        "{text}"
    );
    assert!(
        text.contains("tolerance   none: no timestamp is signed"),
        "{text}"
    );
}
