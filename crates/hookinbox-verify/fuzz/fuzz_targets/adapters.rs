//! Feeds arbitrary requests through every registered adapter: its `claim`,
//! its `envelope` (as if the request had verified, to reach the body parsing
//! that only runs after verification), and the full `Verifier::verify`.
//! Nothing may panic, and what comes out must keep the crate's promises.
//!
//! Input format (so captured requests seed the corpus as they are, see
//! `seed_corpus.py`):
//!
//! ```text
//! <provider name>\n          one of provider_names(); otherwise the first byte picks one
//! <now, unix seconds>\n      otherwise 1_700_000_000
//! Name: value\n              headers, any number; a `?` header is the query string
//! \n
//! <raw body bytes>
//! ```

#![no_main]

use std::sync::OnceLock;

use hookinbox_verify::{
    adapter_for, provider_names, Adapter, AdapterSettings, Headers, Outcome, Probe, Request,
    SecretInput, Verifier,
};
use libfuzzer_sys::fuzz_target;

/// Test secrets: every value the shared vectors and the SDK fixtures use, so
/// seeds from them verify and their mutations reach the envelope code, plus
/// one of each key shape. Each provider takes the ones it can parse.
const SECRETS: &[&str] = &[
    "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8",
    "12345",
    "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
    "8f742231b10e8888abcd99yyyzzz85a5",
    "It's a shared Secret",
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAES4cZNkW4JUqW77p6u3/u0j7K77KV9nVT9RJ5eh1SkBejmSLUMXLgn4hUZ/WRhLEkXzp5FTNqvX+67fZq6br7xA==",
    "Zm9vYmFyX3NlY3JldF90b2tlbg",
    "Zml4dHVyZS1haXJ0YWJsZS1jdXJyZW50LW1hYy1zZWNyZXQtMDAwMQ==",
    "asdf1234",
    "f8ff42701fc50034bfa433628e0524e53ac8b5bd12e486b2a44aa7d3c59d5c25",
    "fixture-sécret-Ångström",
    "fixtureAfterShipCurrentSecret1",
    "fixtureBoxPrimaryKey000000000001",
    "fixtureClickUpCurrentWebhookSecret01",
    "fixtureContentfulCurrentSigningSecret000000000000000000000000000",
    "fixtureEasyPostCurrentSecret01",
    "fixtureNylasCurrentWebhookSecret01",
    "fixtureOnfidoCurrentWebhookToken01",
    "fixtureSanityCurrentWebhookSecret01",
    "fixtureTrelloCurrentOAuthSecret0000000000000001",
    "glwt-shared-token",
    "jdVX5vQm+Xq8tJ3z0cM2kO3QJm5Yw8f0V2u8nJYx7lZQ6qM0f1b+QwRr9x2dS1aBw==",
    "lab-secret-shared",
    "pdl_ntfset_shared_0x",
    "s3cRe7-twitch-subscription",
    "shpss_shared_9f2b",
    "wbhsec_fixturePersonaCurrent01",
    "whpk_uLkIpfN/ebFTjTWW9mNx7J8ckJ840l8A5IxMjBc+QO4=",
    // A bare base64 Ed25519 public key, as Telnyx shows it.
    "uLkIpfN/ebFTjTWW9mNx7J8ckJ840l8A5IxMjBc+QO4=",
    "whsec_K7d2NewSecretShared0",
    "whsec_M3x9OldSecretShared0",
    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "whsec_b2xkLXN0YW5kYXJkLWtleS1ieXRlcy14eFM=",
    "whsec_c2hhcmVkLWtleS0wAAECAwQFBgcICQoLDA0ODxAREhM=",
    "whsec_fixtureAlchemyCurrent001",
    // Issue #23, part C: the current secret of each fixture file.
    "Bearer fixtureAuth0CurrentStreamToken01",
    "f1x7ure0c0ffee0current0000000001",
    "fixtureMondayCurrentSigningSecret01",
    "fixtureNetlifyCurrentJwsSecret01",
    "ZmixturePlivoCurrentAuthToken0001",
    "fixtureVonageCurrentSignatureSecret01",
    // Issue #23, pandadoc and elevenlabs: the current secret of each fixture file.
    "fixturePandaDocCurrentSharedKey0001",
    "wsec_fixtureElevenLabsCurrent0000000000000001",
];

const DEFAULT_NOW: i64 = 1_700_000_000;

struct Endpoint {
    name: &'static str,
    adapter: Box<dyn Adapter>,
    verifier: Verifier,
}

fn settings() -> AdapterSettings {
    AdapterSettings {
        public_url: Some("https://example.com/hooks/fuzz".into()),
        generic_hmac: Some(hookinbox_verify::providers::generic_hmac::GenericHmacSettings::example()),
        verify_token: Some("fuzz-verify-token".into()),
        webhook_id: Some("FUZZWEBHOOKID".into()),
    }
}

fn endpoints() -> &'static [Endpoint] {
    static ENDPOINTS: OnceLock<Vec<Endpoint>> = OnceLock::new();
    ENDPOINTS.get_or_init(|| {
        provider_names()
            .map(|name| {
                let adapter = adapter_for(name, &settings()).expect("registered provider builds");
                let secrets: Vec<SecretInput> = SECRETS
                    .iter()
                    .filter(|s| adapter.parse_key(s).is_ok())
                    .enumerate()
                    .map(|(i, s)| SecretInput {
                        version: format!("v{i}"),
                        value: (*s).into(),
                        not_before: None,
                        not_after: None,
                    })
                    .collect();
                let verifier = Verifier::new(
                    adapter_for(name, &settings()).expect("registered provider builds"),
                    secrets,
                )
                .unwrap_or_else(|e| panic!("no fuzz secret fits provider `{name}`: {e}"));
                Endpoint {
                    name,
                    adapter,
                    verifier,
                }
            })
            .collect()
    })
}

struct Parsed<'a> {
    provider: Option<&'a str>,
    now: i64,
    headers: Headers,
    query: Option<String>,
    body: &'a [u8],
}

fn parse(data: &[u8]) -> Parsed<'_> {
    let split = data.windows(2).position(|w| w == b"\n\n");
    let (head, body) = match split {
        Some(at) => (&data[..at], &data[at + 2..]),
        None => (data, &data[data.len()..]),
    };
    let head = std::str::from_utf8(head).unwrap_or("");
    let mut lines = head.split('\n');
    let provider = lines.next();
    let now = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(DEFAULT_NOW);
    let mut headers = Headers::new();
    let mut query = None;
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            let value = value.strip_prefix(' ').unwrap_or(value);
            if name == "?" {
                query = Some(value.to_owned());
            } else {
                headers.append(name, value);
            }
        }
    }
    Parsed {
        provider,
        now,
        headers,
        query,
        body,
    }
}

fn check_outcome(name: &str, outcome: &Outcome) {
    if let Outcome::Event(event) | Outcome::Ignored(event) = outcome {
        let id = &event.event_id;
        assert!(!id.is_empty(), "{name}: empty event id");
        assert!(id.len() <= 256, "{name}: event id longer than 256");
        assert!(
            !id.chars().any(char::is_control),
            "{name}: control character in event id"
        );
    }
}

fn check_detail(name: &str, detail: &str) {
    // Short or numeric secrets ("12345") could appear in a detail by chance
    // (a skew in seconds); the rest must never.
    let distinctive = |s: &&&str| s.len() >= 8 && !s.bytes().all(|b| b.is_ascii_digit());
    for secret in SECRETS.iter().filter(distinctive) {
        assert!(
            !detail.contains(secret),
            "{name}: a refusal detail shows a configured secret"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let input = parse(data);
    let endpoints = endpoints();
    let selected = input
        .provider
        .and_then(|p| endpoints.iter().position(|e| e.name == p))
        .unwrap_or_else(|| usize::from(data.first().copied().unwrap_or(0)) % endpoints.len());
    let request = Request::new(&input.headers, input.body)
        .with_query(input.query.as_deref())
        .with_received_at_ms(input.now.checked_mul(1000));

    for (index, endpoint) in endpoints.iter().enumerate() {
        match endpoint.adapter.claim(&request) {
            Ok(claim) => {
                for version in endpoint.verifier.keys().versions() {
                    let _ = claim.is_signed_by(&version.key);
                }
            }
            Err(refusal) => check_detail(endpoint.name, &refusal.detail),
        }
        match endpoint.verifier.verify(&request, input.now) {
            Ok(verified) => check_outcome(endpoint.name, verified.outcome()),
            Err(failure) => check_detail(endpoint.name, &failure.refusal.detail),
        }
        // The unsigned URL-verification GET (Meta's `hub.challenge`) reads
        // the query alone; whatever it answers must not panic.
        if let Some(Err(refusal)) = endpoint.adapter.verification_request(request.query) {
            check_detail(endpoint.name, &refusal.detail);
        }
        // The unsigned handover of a signing secret (Asana, Notion) and the
        // bodiless probes (Dropbox's and Okta's challenges) read headers,
        // query and body before any signature.
        if let Some(Err(refusal)) = endpoint.adapter.handover(&request) {
            check_detail(endpoint.name, &refusal.detail);
        }
        for method in ["GET", "HEAD"] {
            let _ = endpoint.adapter.probe(&Probe {
                method,
                query: request.query,
                headers: request.headers,
            });
        }
        if index == selected {
            // As if verified: the body parsing behind the signature check
            // must be as robust as the code in front of it.
            for version in endpoint.verifier.keys().versions() {
                match endpoint.adapter.envelope(&request, &version.key) {
                    Ok(outcome) => check_outcome(endpoint.name, &outcome),
                    Err(refusal) => check_detail(endpoint.name, &refusal.detail),
                }
            }
        }
    }
});
