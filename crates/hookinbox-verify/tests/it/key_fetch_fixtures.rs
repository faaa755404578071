//! Vectors of the providers that sign with their own private keys and name
//! the key that verifies them (`paypal`, `aws_sns`, `plaid`): made by
//! `tests/fixtures/generate/key_fetch_vectors.py`, an independent Python
//! implementation of each documented formula, with a test-only CA and key
//! (`tests/fixtures/key_fetch/pki/`). Each vector carries the key the service
//! would have fetched for it.

use std::path::PathBuf;

use crate::support;

fn check(provider: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/key_fetch")
        .join(format!("{provider}.jsonl"));
    let vectors = support::read_vectors(&path);
    assert!(vectors.len() >= 3, "{provider}: {} vectors", vectors.len());
    assert!(
        vectors
            .iter()
            .all(|v| v.provider == provider && v.fetched_key.is_some()),
        "{provider}: every vector is for it and names its fetched key"
    );
    // At least a valid request and a refused one.
    assert!(vectors.iter().any(|v| v.expect.accept));
    assert!(vectors.iter().any(|v| !v.expect.accept));
    support::assert_all(&vectors);
}

#[test]
fn paypal() {
    check("paypal");
}

#[test]
fn aws_sns() {
    check("aws_sns");
}

#[test]
fn plaid() {
    check("plaid");
}

/// Every provider whose catalogue entry names the script has its file
/// here, checked above.
#[test]
fn every_provider_citing_the_script_has_its_vectors() {
    use hookinbox_verify::{adapter_for, provider_names, AdapterSettings, VectorSource};
    const SCRIPT: &str = "crates/hookinbox-verify/tests/fixtures/generate/key_fetch_vectors.py";
    let settings = AdapterSettings {
        webhook_id: Some("EXAMPLEWEBHOOKID".into()),
        ..AdapterSettings::default()
    };
    let citing: Vec<&str> = provider_names()
        .filter(|name| {
            adapter_for(name, &settings).is_ok_and(|adapter| {
                adapter.facts().vectors == VectorSource::IndependentPython(SCRIPT)
            })
        })
        .collect();
    assert_eq!(citing, ["paypal", "aws_sns", "plaid"]);
}
