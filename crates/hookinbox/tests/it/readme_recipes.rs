//! The README's copyable configuration ("Routing", "Broker targets") is
//! what this build accepts: each `toml` block of those sections, under the
//! endpoint it is written for, passes `hookinbox config check`.

use std::path::Path;
use std::process::Command;

use crate::support::*;

const README: &str = include_str!("../../../../README.md");

/// The `toml` blocks of the README section headed `## {heading}`.
fn toml_blocks(heading: &str) -> Vec<String> {
    let start = README
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("the README has a section `{heading}`"));
    let section = &README[start + 1..];
    let section = match section[3..].find("\n## ") {
        Some(end) => &section[..end + 3],
        None => section,
    };
    let mut blocks = Vec::new();
    let mut rest = section;
    while let Some(open) = rest.find("```toml\n") {
        let body = &rest[open + "```toml\n".len()..];
        let close = body.find("```").expect("a closed code block");
        blocks.push(body[..close].to_owned());
        rest = &body[close..];
    }
    blocks
}

/// `config check` of `block` under an endpoint `id` of `provider`: its
/// exit code and stderr. The secrets the recipes read from the
/// environment are set.
fn config_check(dir: &Path, id: &str, provider: &str, secret: &str, block: &str) -> (bool, String) {
    let config = TestConfig::new(&dir.join("inbox.db"))
        .endpoint(id, provider, "", secret)
        .extra(block)
        .to_string();
    let path = dir.join("hookinbox.toml");
    std::fs::write(&path, config).expect("write the config");
    let out = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["config", "check", "--config"])
        .arg(&path)
        .env("BILLING_WEBHOOK_SECRET", TARGET_SECRET)
        .env("FRAUD_WEBHOOK_SECRET", TARGET_SECRET)
        .env("ERP_WEBHOOK_SECRET", TARGET_SECRET)
        .env("CI_WEBHOOK_SECRET", TARGET_SECRET)
        .env("RABBITMQ_PASSWORD", "guest")
        .output()
        .expect("run hookinbox");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Checks `block`. `rate_limit` on a target is #21's flow-control field,
/// built on another branch: until this build knows it, the recipe is
/// checked without that line and the refusal must name that field alone;
/// once it is known, the whole recipe must pass.
fn assert_loads(id: &str, provider: &str, secret: &str, block: &str) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (ok, stderr) = config_check(dir.path(), id, provider, secret, block);
    if ok {
        return;
    }
    assert!(
        stderr.contains("unknown field `rate_limit`"),
        "the recipe does not load:\n{block}\n{stderr}"
    );
    let without: String = block
        .lines()
        .filter(|line| !line.starts_with("rate_limit = "))
        .map(|line| format!("{line}\n"))
        .collect();
    let (ok, stderr) = config_check(dir.path(), id, provider, secret, &without);
    assert!(ok, "the recipe does not load:\n{without}\n{stderr}");
}

const STRIPE_SECRET: &str = "whsec_readme_recipes_000000000000";
const GITHUB_SECRET: &str = "readme-recipes-github-secret-0000";

#[test]
fn the_readme_routing_recipes_load() {
    let blocks = toml_blocks("Routing");
    assert_eq!(blocks.len(), 2, "the Stripe recipes and the GitHub one");
    let stripe = &blocks[0];
    for needle in [
        r#"event_types = ["invoice.*"]"#,
        "body.data.object.amount > 1000",
        "rate_limit = { per_second = 50, burst = 50 }",
    ] {
        assert!(stripe.contains(needle), "{needle}");
    }
    assert_loads("stripe", "stripe", STRIPE_SECRET, stripe);
    let github = &blocks[1];
    assert!(github.contains("refs/heads/main"));
    assert_loads("github", "github", GITHUB_SECRET, github);
}

#[test]
fn the_readme_broker_targets_load() {
    let blocks = toml_blocks("Broker targets");
    assert_eq!(blocks.len(), 1);
    for kind in ["nats", "rabbitmq", "redis_stream", "mqtt"] {
        assert!(
            blocks[0].contains(&format!("kind = \"{kind}\"")),
            "a {kind} target"
        );
    }
    assert_loads("stripe", "stripe", STRIPE_SECRET, &blocks[0]);
}
