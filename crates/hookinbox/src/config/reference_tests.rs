//! The configuration reference cannot drift from the parser.
//!
//! The ground truth is serde's own list of each struct's fields: asked to
//! read a table with an unknown key, a `deny_unknown_fields` struct answers
//! with every field it accepts. Against that list:
//! - [`EXAMPLE`] (what `hookinbox config example` prints) parses, checks,
//!   and, with its commented-out optional settings uncommented, has exactly
//!   the fields of every table, and its values are the defaults;
//! - docs/configuration.md documents every field under its table's heading.
//!
//! So a field added to a `*File` struct fails these tests until the example and
//! the reference show it, and a field removed fails them until both drop it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::de::DeserializeOwned;

use super::admin::AdminFile;
use super::encryption::{EncryptionFile, EncryptionKeyFile};
use super::endpoint::{BasicAuthFile, EndpointFile, GenericHmacFile, SecretFile};
use super::file::ConfigFile;
use super::metrics::MetricsFile;
use super::plaid_api::PlaidApiFile;
use super::reconcile::{EndpointReconcileFile, ReconcileFile};
use super::retention::RetentionFile;
use super::server::{RateLimitFile, ServerFile, TlsFile};
use super::storage::{DeliveryFile, StorageFile};
use super::target::TargetFile;
use super::telemetry::{OtlpFile, TelemetryFile};
use super::*;

/// Every table of the file (as a dotted path) and the fields serde accepts in it.
fn tables() -> Vec<(&'static str, BTreeSet<String>)> {
    vec![
        ("", fields_of::<ConfigFile>()),
        ("server", fields_of::<ServerFile>()),
        ("server.tls", fields_of::<TlsFile>()),
        ("server.unverified_rate_limit", fields_of::<RateLimitFile>()),
        ("storage", fields_of::<StorageFile>()),
        ("delivery", fields_of::<DeliveryFile>()),
        ("admin", fields_of::<AdminFile>()),
        ("encryption", fields_of::<EncryptionFile>()),
        ("encryption.key", fields_of::<EncryptionKeyFile>()),
        ("retention", fields_of::<RetentionFile>()),
        ("metrics", fields_of::<MetricsFile>()),
        ("reconcile", fields_of::<ReconcileFile>()),
        ("telemetry", fields_of::<TelemetryFile>()),
        ("telemetry.otlp", fields_of::<OtlpFile>()),
        // A map of header names: no fields of its own.
        ("telemetry.otlp.headers", BTreeSet::new()),
        ("endpoint", fields_of::<EndpointFile>()),
        ("endpoint.rate_limit", fields_of::<RateLimitFile>()),
        ("endpoint.basic_auth", fields_of::<BasicAuthFile>()),
        ("endpoint.generic_hmac", fields_of::<GenericHmacFile>()),
        ("endpoint.secret", fields_of::<SecretFile>()),
        ("endpoint.plaid", fields_of::<PlaidApiFile>()),
        ("endpoint.target", fields_of::<TargetFile>()),
        ("endpoint.target.rate_limit", fields_of::<TargetRateLimit>()),
        (
            "endpoint.target.circuit_breaker",
            fields_of::<CircuitBreakerSettings>(),
        ),
        ("endpoint.reconcile", fields_of::<EndpointReconcileFile>()),
    ]
}

/// The fields a `deny_unknown_fields` struct accepts, from serde's refusal
/// of an unknown one: "unknown field `…`, expected one of `a`, `b`".
fn fields_of<T: DeserializeOwned + std::fmt::Debug>() -> BTreeSet<String> {
    let refusal = toml::from_str::<T>("zz_not_a_field = 0").expect_err("an unknown field");
    let message = refusal.message();
    let expected = message
        .split_once("expected")
        .unwrap_or_else(|| panic!("serde names the expected fields: {message}"))
        .1;
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// A config with its commented-out settings and tables uncommented:
/// `# key = value`, `# [table]` and `# [[table]]` lines. Prose comments
/// never start with `word =` or `[`.
fn uncomment(text: &str) -> String {
    text.lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(rest) if looks_like_setting(rest) => rest,
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn looks_like_setting(text: &str) -> bool {
    if text.starts_with('[') {
        return true;
    }
    let Some((key, _)) = text.split_once(" = ") else {
        return false;
    };
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

/// Keys by table path, over every element of an array of tables.
fn keys_by_table(table: &toml::Table, path: &str, into: &mut BTreeMap<String, BTreeSet<String>>) {
    into.entry(path.to_owned()).or_default();
    for (key, value) in table {
        into.get_mut(path).map(|keys| keys.insert(key.clone()));
        let child = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        match value {
            toml::Value::Table(inner) => keys_by_table(inner, &child, into),
            toml::Value::Array(items) => {
                for item in items {
                    if let toml::Value::Table(inner) = item {
                        keys_by_table(inner, &child, into);
                    }
                }
            }
            _ => {}
        }
    }
}

#[test]
fn the_example_parses_and_checks() {
    let settings = parse(EXAMPLE, Path::new("/etc/hookinbox")).expect("the example is valid");
    assert_eq!(settings.endpoints[0].targets[0].name, "billing");
    // Uncommented, every optional setting has the right name and type.
    let uncommented = uncomment(EXAMPLE);
    toml::from_str::<ConfigFile>(&uncommented)
        .unwrap_or_else(|e| panic!("the uncommented example: {e}\n{uncommented}"));
}

#[test]
fn the_example_shows_every_field_of_every_table() {
    let document: toml::Table = toml::from_str(&uncomment(EXAMPLE)).unwrap();
    let mut shown = BTreeMap::new();
    keys_by_table(&document, "", &mut shown);
    let tables = tables();
    for path in shown.keys() {
        assert!(
            tables.iter().any(|(known, _)| known == path),
            "table `{path}` of the example is not listed in reference_tests::tables()"
        );
    }
    for (path, accepted) in &tables {
        let in_example = shown.get(*path).cloned().unwrap_or_default();
        let missing: Vec<_> = accepted.difference(&in_example).collect();
        assert!(
            missing.is_empty(),
            "example.toml does not show {missing:?} of `[{path}]`"
        );
    }
}

/// The example's values are the defaults: the settings it gives equal
/// those of a file that sets only what has no default, to the same values.
#[test]
fn the_example_shows_the_defaults() {
    let only_required = r#"
        [admin]
        listen = "127.0.0.1:9090"

        [[encryption.key]]
        id = "k1"
        value_env = "HOOKINBOX_ENCRYPTION_KEY"

        [[endpoint]]
        id = "stripe"
        provider = "stripe"

        [[endpoint.secret]]
        version = "2026-11"
        value_env = "STRIPE_WEBHOOK_SECRET"

        [[endpoint.target]]
        name = "billing"
        kind = "http"
        url = "https://billing.internal/hooks/stripe"
        secret_env = "BILLING_WEBHOOK_SECRET"
    "#;
    let base = Path::new("/etc/hookinbox");
    let json = |text: &str| serde_json::to_value(parse(text, base).unwrap()).unwrap();
    let (example, defaults) = (json(EXAMPLE), json(only_required));
    assert!(
        example == defaults,
        "the example's values differ from the defaults:\nexample: {example:#}\ndefaults: {defaults:#}"
    );
}

/// The development config at the repository's root starts as it is, and
/// with its commented-out settings uncommented as a whole (what a newcomer
/// does with the target block) it still passes every check, and the target
/// belongs to the `lab` endpoint the comment promises (TOML binds it to the
/// last `[[endpoint]]`).
#[test]
fn the_development_config_parses_and_its_target_sits_under_lab() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../hookinbox.example.toml");
    let text = std::fs::read_to_string(path).expect("hookinbox.example.toml");
    parse(&text, Path::new("/etc/hookinbox")).expect("hookinbox.example.toml is valid");
    parse(&uncomment(&text), Path::new("/etc/hookinbox"))
        .unwrap_or_else(|e| panic!("hookinbox.example.toml, uncommented: {e}"));
    let uncommented: ConfigFile = toml::from_str(&uncomment(&text)).unwrap();
    let with_targets: Vec<&str> = uncommented
        .endpoint
        .iter()
        .filter(|endpoint| !endpoint.target.is_empty())
        .map(|endpoint| endpoint.id.as_str())
        .collect();
    assert_eq!(with_targets, ["lab"]);
}

/// docs/configuration.md documents every field the parser accepts, under the heading of
/// its table (`[server]`, `[[endpoint.target]]`, …) or, for an inline
/// table without a heading of its own (`rate_limit = { … }`), its parent's.
#[test]
fn the_reference_documents_every_field() {
    let reference = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/configuration.md"
    ))
    .expect("docs/configuration.md");
    for (path, fields) in tables() {
        if path.is_empty() {
            continue;
        }
        let block = reference_block(&reference, path)
            .or_else(|| {
                let parent = path.rsplit_once('.').map(|(parent, _)| parent)?;
                reference_block(&reference, parent)
            })
            .unwrap_or_else(|| panic!("docs/configuration.md has no heading for `[{path}]`"));
        let documented = identifiers_in_code(block);
        let missing: Vec<_> = fields.difference(&documented).collect();
        assert!(
            missing.is_empty(),
            "docs/configuration.md does not document {missing:?} under `[{path}]`"
        );
    }
}

/// The text under the heading that names `[path]` or `[[path]]`, up to the
/// next heading of the same or a higher level.
fn reference_block<'a>(reference: &'a str, path: &str) -> Option<&'a str> {
    let names = [format!("`[{path}]`"), format!("`[[{path}]]`")];
    let mut offset = 0;
    let mut start = None;
    for line in reference.split_inclusive('\n') {
        let level = line.bytes().take_while(|b| *b == b'#').count();
        match start {
            None if level > 0 && names.iter().any(|name| line.contains(name.as_str())) => {
                start = Some((offset, level));
            }
            Some((begin, own)) if level > 0 && level <= own => {
                return Some(&reference[begin..offset]);
            }
            _ => {}
        }
        offset += line.len();
    }
    start.map(|(begin, _)| &reference[begin..])
}

/// Every identifier (`[a-z_]+`) inside a code span or a code block.
fn identifiers_in_code(markdown: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut collect = |code: &str| {
        for word in code.split(|c: char| !(c.is_ascii_lowercase() || c == '_')) {
            if !word.is_empty() {
                found.insert(word.to_owned());
            }
        }
    };
    let mut in_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            collect(line);
        } else {
            for span in line.split('`').skip(1).step_by(2) {
                collect(span);
            }
        }
    }
    found
}

#[test]
fn serde_lists_a_structs_fields() {
    let fields = fields_of::<RateLimitFile>();
    assert_eq!(
        fields.into_iter().collect::<Vec<_>>(),
        ["burst", "per_second"]
    );
}
