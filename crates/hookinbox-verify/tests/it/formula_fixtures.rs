//! Requests signed by an independent Python implementation of each
//! provider's documented formula (`tests/fixtures/documented/gen_hmac_formula.py`),
//! for providers with no official SDK that signs or checks them, must verify
//! exactly as each vector says. And every provider whose catalogue entry
//! names that script as its vector source has at least three vectors there.

use crate::support;

use std::path::PathBuf;

use hookinbox_verify::providers::generic_hmac::GenericHmacSettings;
use hookinbox_verify::{adapter_for, provider_names, AdapterSettings, VectorSource};

const SCRIPT: &str = "crates/hookinbox-verify/tests/fixtures/documented/gen_hmac_formula.py";

fn vectors() -> Vec<support::Vector> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/documented/hmac_formula.jsonl");
    support::read_vectors(&path)
}

#[test]
fn formula_vectors_verify_as_expected() {
    support::assert_all(&vectors());
}

#[test]
fn every_provider_citing_the_script_has_three_vectors_there() {
    let vectors = vectors();
    let settings = AdapterSettings {
        public_url: Some("https://example.com/hooks/x".into()),
        generic_hmac: Some(GenericHmacSettings::example()),
        verify_token: Some("verify-token".into()),
        webhook_id: Some("EXAMPLEWEBHOOKID".into()),
    };
    let mut citing = 0;
    for name in provider_names() {
        let adapter = adapter_for(name, &settings).expect("every provider builds");
        if adapter.facts().vectors != VectorSource::IndependentPython(SCRIPT) {
            continue;
        }
        citing += 1;
        let count = vectors.iter().filter(|v| v.provider == name).count();
        assert!(count >= 3, "{name}: {count} vectors in hmac_formula.jsonl");
    }
    assert!(citing > 0, "no provider cites {SCRIPT}");
}
